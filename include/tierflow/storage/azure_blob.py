"""An Azure Blob Storage container as an ObjectStore: ``abfs://container@account/prefix`` (or
``wasb://``), reached through the Airflow connection ``wasb_default`` (``TIERFLOW_AZURE_CONN_ID``)
with the Microsoft Azure provider's ``WasbHook``.

Writes stream: an object of at most one part is one Put Blob; a larger one is staged as
blocks of ``part_size`` and made visible by one Put Block List, atomically, only when every
block is in. A failed or killed upload leaves only uncommitted blocks, which no reader sees
and Azure discards after a week. Block ids carry a fresh id per upload, so a retried upload
never commits another attempt's blocks. The sha256 of what was sent is computed on the way and
stored in the blob's metadata by the same request that makes it visible.

Every request is retried on transient failures (5xx, 408 and 429 throttling, resets, broken
reads) by ``storage.retry``; the SDK's own retries are off on the clients tierflow builds, so
the configured policy is the only bound.
"""

from __future__ import annotations

import base64
import contextlib
import uuid
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any, NoReturn, Unpack
from urllib.parse import urlparse

from azure.core import MatchConditions
from azure.core.exceptions import AzureError, HttpResponseError, ResourceNotFoundError

from tierflow.config import default
from tierflow.rsm import ObjectInfo, RemoteResourceNotFoundError, RemoteStorageError
from tierflow.storage.cloud_store import SHA256_FIELD, CloudObjectStore, CloudOptions, stored_info
from tierflow.storage.keys import normalize_prefix
from tierflow.storage.object_store import READ_CHUNK, PagedListing, Parts, needs_no_request
from tierflow.storage.retry import Attempts, retry_call
from tierflow.storage.urls import AZURE_SCHEMES, shown_url

ContainerClient = Any  # azure.storage.blob.ContainerClient
DEFAULT_PART_SIZE = 8 * 1024 * 1024
MAX_BLOCKS = 50_000  # Azure's limit per blob
LIST_PAGE_SIZE = 5000  # List Blobs' maximum


def parse_azure_url(url: str) -> tuple[str, str, str]:
    """``abfs://container@account[.host]/prefix`` -> (container, account, prefix)."""
    parsed, shown = urlparse(url), shown_url(url)
    container, at, host = parsed.netloc.partition("@")
    if parsed.scheme not in AZURE_SCHEMES or not (container and at and host):
        raise ValueError(f"{shown!r}: expected abfs://container@account[/prefix]")
    if parsed.query or parsed.fragment or parsed.password or ":" in container:
        raise ValueError(
            f"{shown!r}: expected abfs://container@account[/prefix], without credentials "
            "(they belong in the Airflow connection, TIERFLOW_AZURE_CONN_ID), query or fragment"
        )
    return container, host.split(".")[0], normalize_prefix(parsed.path)


def hook_container(
    container: str, wasb_conn_id: str = default("azure_conn_id"),
    timeout_s: float = default("storage_timeout_s"),
) -> ContainerClient:  # fmt: skip
    """The container of an Airflow connection, as WasbHook resolves its credentials; rebuilt
    with tierflow's timeouts and without the SDK's retries."""
    from airflow.providers.microsoft.azure.hooks.wasb import WasbHook
    from azure.storage.blob import BlobServiceClient

    service = WasbHook(wasb_conn_id=wasb_conn_id).get_conn()
    ours = BlobServiceClient(
        account_url=service.url,
        credential=service.credential,
        retry_total=0,
        connection_timeout=timeout_s,
        read_timeout=timeout_s,
    )
    return ours.get_container_client(container)


class AzureBlobObjectStore(CloudObjectStore, PagedListing):
    def __init__(
        self,
        container: str,
        *,
        account: str | None = None,
        wasb_conn_id: str = default("azure_conn_id"),
        client: ContainerClient | None = None,
        **options: Unpack[CloudOptions],
    ) -> None:
        super().__init__(options, DEFAULT_PART_SIZE)
        if client is None:
            client = hook_container(container, wasb_conn_id, self.timeout_s)
        self.client = client
        if account is not None and account != self.client.account_name:
            raise ValueError(
                f"abfs://{container}@{account}: the connection {wasb_conn_id!r} is for the "
                f"storage account {self.client.account_name!r}"
            )

    def describe(self) -> str:
        """Container, prefix and endpoint; never credentials."""
        where = f"abfs://{self.client.container_name}/{self.prefix}"
        return f"{where} at {self.client.primary_endpoint}"

    def _blob(self, key: str) -> Any:
        return self.client.get_blob_client(self._name(key))

    def _send(self, key: str, action: str, request: Any) -> Any:
        try:
            return retry_call(self.retry, key, action, request)
        except (AzureError, OSError) as exc:
            _raise_storage_error(key, action, exc)

    # -- writes -------------------------------------------------------------------------------

    def _write(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        """Fill parts from the stream: one Put Blob when it ends within a part, else blocks
        staged as they fill and one Put Block List at the end (nothing visible before)."""
        blob, blocks, upload = self._blob(key), [], uuid.uuid4().hex
        parts = Parts(chunks, self.part_size)
        try:
            for part in parts.full():
                blocks.append(self._stage(key, blob, upload, len(blocks), part))
        except OSError as exc:  # reading the source, as the local store reports it
            raise RemoteStorageError(key, f"write failed: {exc}") from exc
        metadata = {SHA256_FIELD: parts.sha256()}
        if not blocks:
            data = bytes(parts.rest)
            put = partial(blob.upload_blob, data, overwrite=True, metadata=metadata)
            self._send(key, "upload", put)
        else:
            blocks.append(self._stage(key, blob, upload, len(blocks), bytes(parts.rest)))
            commit = partial(blob.commit_block_list, blocks, metadata=metadata)
            self._send(key, "commit blocks", commit)
        return parts.info(key)

    def _stage(self, key: str, blob: Any, upload: str, number: int, data: bytes) -> str:
        if number >= MAX_BLOCKS:
            raise RemoteStorageError(key, f"more than {MAX_BLOCKS} blocks: raise the part size")
        block_id = base64.b64encode(f"{upload}-{number:06d}".encode()).decode()
        self._send(key, f"upload of block {number + 1}", lambda: blob.stage_block(block_id, data))
        return block_id

    # -- reads --------------------------------------------------------------------------------

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes [start, end) in one ranged Get Blob; past the end of the blob there are none."""
        if needs_no_request(self, key, start, end, RemoteResourceNotFoundError):
            return b""
        blob, length = self._blob(key), None if end is None else end - start
        try:
            return retry_call(
                self.retry,
                key,
                "read",
                lambda: blob.download_blob(offset=start, length=length).readall(),
            )
        except HttpResponseError as exc:
            if exc.status_code == 416:  # starts at or past the end (or the blob is empty)
                return b""
            _raise_storage_error(key, "read", exc)
        except (AzureError, OSError) as exc:
            _raise_storage_error(key, "read", exc)

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        """One streaming Get Blob; a transient failure mid-stream resumes at the next byte, of
        the same version of the blob (If-Match on its ETag)."""
        blob, attempts, position, etag = self._blob(key), Attempts(self.retry, key, "read"), 0, None
        while True:
            try:
                condition = {"etag": etag, "match_condition": MatchConditions.IfNotModified}
                stream = blob.download_blob(offset=position or None, **(condition if etag else {}))
                etag = etag or stream.properties.etag
                for chunk in stream.chunks():
                    for at in range(0, len(chunk), chunk_size):
                        piece = chunk[at : at + chunk_size]
                        position += len(piece)
                        yield piece
                return
            except (AzureError, OSError) as exc:
                try:
                    attempts.failed(exc)
                except (AzureError, OSError) as permanent:
                    _raise_storage_error(key, "read", permanent)

    def stat(self, key: str) -> ObjectInfo | None:
        blob = self._blob(key)
        try:
            found = retry_call(self.retry, key, "stat", blob.get_blob_properties)
        except ResourceNotFoundError:
            return None
        except (AzureError, OSError) as exc:
            _raise_storage_error(key, "stat", exc)
        sha256 = (found.metadata or {}).get(SHA256_FIELD)
        return stored_info(key, found.size, sha256, found.last_modified)

    # -- deletes and listing ------------------------------------------------------------------

    def delete(self, keys: Iterable[str]) -> None:
        """Delete Blob per key; a blob already gone is deleted."""
        for key in dict.fromkeys(keys):
            blob = self._blob(key)
            self._send(key, "delete", lambda b=blob: _delete_if_there(b))

    def _page(self, prefix: str, token: str | None) -> tuple[list[str], str | None]:
        pages = self.client.list_blob_names(
            name_starts_with=self.prefix + prefix, results_per_page=LIST_PAGE_SIZE
        ).by_page(continuation_token=token)
        names = list(next(pages))
        return names, pages.continuation_token


def _delete_if_there(blob: Any) -> None:
    with contextlib.suppress(ResourceNotFoundError):
        blob.delete_blob()


def _raise_storage_error(key: str, action: str, exc: BaseException) -> NoReturn:
    """The project's storage errors, naming the key; a missing blob is not-found."""
    if isinstance(exc, RemoteStorageError):
        raise exc
    if isinstance(exc, ResourceNotFoundError):
        raise RemoteResourceNotFoundError(key, "no such object") from exc
    if isinstance(exc, HttpResponseError):
        code = getattr(exc.error_code, "value", exc.error_code) or exc.status_code
        raise RemoteStorageError(key, f"{action} failed: {code}: {exc.reason}") from exc
    raise RemoteStorageError(key, f"{action} failed: {exc}") from exc
