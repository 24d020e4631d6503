"""A Google Cloud Storage bucket as an ObjectStore: ``gs://bucket/prefix``, reached through the
Airflow connection ``google_cloud_default`` (``TIERFLOW_GCP_CONN_ID``) with the Google
provider's ``GCSHook``.

Writes stream: an object of at most one part is one multipart upload carrying its sha256 in the
object's metadata; a larger one is a resumable upload of ``part_size`` chunks, finalized by the
last chunk, so nothing is visible before every byte is in. A chunk that fails is sent again from
the offset the session reports (``recover``); an upload that fails for good is cancelled (its
session deleted), and a killed one leaves only a session that GCS discards after a week. The
sha256 of a resumable upload is known after its last chunk, so it is patched into the
metadata of exactly that generation.

Every request is retried on transient failures (5xx, 408 and 429, resets, broken reads) by
``storage.retry``; the client library's own retries are off (``retry=None`` on each call, a
zero retry strategy on resumable sessions), so the configured policy is the only bound.
Deletes are single requests sent concurrently, each retried on its own and a missing object
counted as deleted: the JSON API's batch endpoint saves round trips but not quota, and answers
a batch with one status per request that would need retrying one by one anyway.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NoReturn, Unpack
from urllib.parse import urlparse

from google.api_core import exceptions as google_errors
from google.auth import exceptions as auth_errors
from google.resumable_media import InvalidResponse

from tierflow.config import default
from tierflow.rsm import ObjectInfo, RemoteResourceNotFoundError, RemoteStorageError
from tierflow.storage.cloud_store import SHA256_FIELD, CloudObjectStore, CloudOptions, stored_info
from tierflow.storage.gcs_upload import ResumableWrite
from tierflow.storage.keys import normalize_prefix
from tierflow.storage.object_store import READ_CHUNK, PagedListing, needs_no_request
from tierflow.storage.retry import retry_call
from tierflow.storage.urls import shown_url

StorageClient = Any  # google.cloud.storage.Client
DEFAULT_PART_SIZE = 8 * 1024 * 1024
READ_WINDOW = 8 * 1024 * 1024  # bytes per ranged GET of a streamed read
LIST_PAGE_SIZE = 1000  # the JSON API's maximum
DELETE_CONCURRENCY = 16
# What a request raises when it fails: the API's errors, the auth library's (a token refresh
# that got no answer), the resumable session's, and the network's (requests' are OSErrors).
_RequestFailed = (
    google_errors.GoogleAPICallError,
    auth_errors.TransportError,
    InvalidResponse,
    OSError,
)


def parse_gcs_url(url: str) -> tuple[str, str]:
    """``gs://bucket/prefix`` -> (bucket, prefix)."""
    parsed, shown = urlparse(url), shown_url(url)
    if parsed.scheme != "gs" or not parsed.netloc:
        raise ValueError(f"{shown!r}: expected gs://bucket[/prefix]")
    if parsed.query or parsed.fragment or "@" in parsed.netloc or ":" in parsed.netloc:
        raise ValueError(
            f"{shown!r}: expected gs://bucket[/prefix], without credentials (they belong in "
            "the Airflow connection, TIERFLOW_GCP_CONN_ID), port, query or fragment"
        )
    return parsed.netloc, normalize_prefix(parsed.path)


def hook_client(gcp_conn_id: str = default("gcp_conn_id")) -> StorageClient:
    """The storage client of an Airflow connection, with GCSHook's credentials and project."""
    from airflow.providers.google.cloud.hooks.gcs import GCSHook

    return GCSHook(gcp_conn_id=gcp_conn_id).get_conn()


def endpoint(client: StorageClient) -> str:
    """Where the client sends requests: storage.googleapis.com, or STORAGE_EMULATOR_HOST."""
    return client._connection.API_BASE_URL


class GcsObjectStore(CloudObjectStore, PagedListing):
    def __init__(
        self,
        bucket: str,
        *,
        gcp_conn_id: str = default("gcp_conn_id"),
        client: StorageClient | None = None,
        **options: Unpack[CloudOptions],
    ) -> None:
        super().__init__(options, DEFAULT_PART_SIZE)
        self.client = client if client is not None else hook_client(gcp_conn_id)
        self.bucket = self.client.bucket(bucket)

    def describe(self) -> str:
        """Bucket, prefix and endpoint; never credentials."""
        return f"gs://{self.bucket.name}/{self.prefix} at {endpoint(self.client)}"

    def _send(self, key: str, action: str, request: Any) -> Any:
        try:
            return retry_call(self.retry, key, action, request)
        except _RequestFailed as exc:
            _raise_storage_error(key, action, exc)

    # -- writes -------------------------------------------------------------------------------

    def _write(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        """One request when the stream ends within a part, else a resumable upload started as
        the first part fills (nothing visible before its last chunk, cancelled on failure)."""
        digest, size, buffer, upload = hashlib.sha256(), 0, bytearray(), None
        try:
            for chunk in _source(key, chunks):
                digest.update(chunk)
                size += len(chunk)
                if upload is not None:
                    upload.feed(chunk)
                    continue
                buffer += chunk
                if len(buffer) > self.part_size:
                    upload = self._resumable(key)
                    upload.feed(bytes(buffer))
            if upload is None:
                self._upload_whole(key, bytes(buffer), digest.hexdigest())
            else:
                self._record_sha256(key, upload.finish(), digest.hexdigest())
        except _RequestFailed as exc:
            _raise_storage_error(key, "upload", exc)
        finally:
            if upload is not None:
                upload.cancel()  # a no-op once finished
        return ObjectInfo(key, size, digest.hexdigest())

    def _resumable(self, key: str) -> ResumableWrite:
        return ResumableWrite(
            self.client, self.bucket.name, self._name(key), key,
            part_size=self.part_size, retry=self.retry, timeout_s=self.timeout_s,
        )  # fmt: skip

    def _upload_whole(self, key: str, data: bytes, sha256: str) -> None:
        blob = self.bucket.blob(self._name(key))
        blob.metadata = {SHA256_FIELD: sha256}
        upload = partial(
            blob.upload_from_string, data, content_type="application/octet-stream",
            retry=None, timeout=self.timeout_s, checksum=None,
        )  # fmt: skip
        self._send(key, "upload", upload)

    def _record_sha256(self, key: str, generation: int, sha256: str) -> None:
        """The digest into the metadata of the generation just written, and no later one."""
        blob = self.bucket.blob(self._name(key))
        blob.metadata = {SHA256_FIELD: sha256}
        patch = partial(
            blob.patch, if_generation_match=generation, retry=None, timeout=self.timeout_s
        )
        self._send(key, "recording the sha256", patch)

    # -- reads --------------------------------------------------------------------------------

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes [start, end) in one ranged GET; past the end of the object there are none."""
        if needs_no_request(self, key, start, end, RemoteResourceNotFoundError):
            return b""
        return self._range(key, self.bucket.blob(self._name(key)), start, end)

    def _range(self, key: str, blob: Any, start: int, end: int | None) -> bytes:
        download = partial(
            blob.download_as_bytes, start=start, end=None if end is None else end - 1,
            raw_download=True, checksum=None, retry=None, timeout=self.timeout_s,
        )  # fmt: skip
        try:
            return retry_call(self.retry, key, "read", download)
        except google_errors.RequestRangeNotSatisfiable:  # starts at or past the end
            return b""
        except _RequestFailed as exc:
            _raise_storage_error(key, "read", exc)

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        """Ranged GETs of one generation of the object, so a stream never mixes two writes;
        each is retried on its own, so a broken read resumes at the window it was reading."""
        found = self._get_blob(key)
        if found is None:
            raise RemoteResourceNotFoundError(key, "no such object")
        blob = self.bucket.blob(self._name(key), generation=found.generation)
        for position in range(0, found.size, READ_WINDOW):
            data = self._range(key, blob, position, min(position + READ_WINDOW, found.size))
            for at in range(0, len(data), chunk_size):
                yield data[at : at + chunk_size]

    def _get_blob(self, key: str) -> Any:
        name = self._name(key)
        get = partial(self.bucket.get_blob, name, retry=None, timeout=self.timeout_s)
        return self._send(key, "stat", get)

    def stat(self, key: str) -> ObjectInfo | None:
        found = self._get_blob(key)
        if found is None:
            return None
        sha256 = (found.metadata or {}).get(SHA256_FIELD)
        return stored_info(key, found.size, sha256, found.updated)

    # -- deletes and listing ------------------------------------------------------------------

    def delete(self, keys: Iterable[str]) -> None:
        """One delete per key, ``DELETE_CONCURRENCY`` at a time; a key already gone is
        deleted. The first failure is raised once every request has ended."""
        unique = list(dict.fromkeys(keys))
        if not unique:
            return
        with ThreadPoolExecutor(min(DELETE_CONCURRENCY, len(unique))) as pool:
            list(pool.map(self._delete_one, unique))

    def _delete_one(self, key: str) -> None:
        blob = self.bucket.blob(self._name(key))
        self._send(key, "delete", partial(_delete_if_there, blob, self.timeout_s))

    def _page(self, prefix: str, token: str | None) -> tuple[list[str], str | None]:
        blobs = self.client.list_blobs(
            self.bucket, prefix=self.prefix + prefix, page_size=LIST_PAGE_SIZE,
            page_token=token, fields="items(name),nextPageToken", retry=None,
            timeout=self.timeout_s,
        )  # fmt: skip
        page = next(blobs.pages, None)
        names = [blob.name for blob in page] if page is not None else []
        return names, blobs.next_page_token


def _source(key: str, chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks to upload; failing to read them is a write failure naming the key."""
    iterator = iter(chunks)
    while True:
        try:
            chunk = next(iterator)
        except StopIteration:
            return
        except OSError as exc:  # reading the source, as the local store reports it
            raise RemoteStorageError(key, f"write failed: {exc}") from exc
        yield chunk


def _delete_if_there(blob: Any, timeout_s: float) -> None:
    with contextlib.suppress(google_errors.NotFound):
        blob.delete(retry=None, timeout=timeout_s)


def _raise_storage_error(key: str, action: str, exc: BaseException) -> NoReturn:
    """The project's storage errors, naming the key; a missing object is not-found."""
    if isinstance(exc, RemoteStorageError):
        raise exc
    if isinstance(exc, google_errors.NotFound):
        raise RemoteResourceNotFoundError(key, "no such object") from exc
    if isinstance(exc, google_errors.GoogleAPICallError):
        raise RemoteStorageError(key, f"{action} failed: {exc.code}: {exc.message}") from exc
    raise RemoteStorageError(key, f"{action} failed: {exc}") from exc
