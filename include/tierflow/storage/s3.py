"""An S3 bucket, or any S3-compatible store, as an ObjectStore.

In Airflow the boto3 client comes from the Amazon provider's ``S3Hook`` on an Airflow
connection (``aws_default``): credentials, region and, for an S3-compatible store, an
``endpoint_url`` in the connection's extras all live in one place. Spark executors cannot use
Airflow; they pass a plain boto3 client built by ``s3_handover.S3ClientSpec``.

Writes stream: an object of at most one part goes up in a single PUT, a larger one as a
multipart upload of ``part_size`` parts, aborted on any failure so that no incomplete upload is
left behind. The sha256 of what was sent is computed on the way and stored with the object:
as user metadata on a single PUT, and as an object tag after a multipart upload, because
metadata must be given before the first part and the digest is known only after the last.

Every request is retried on transient failures (5xx, throttling, timeouts, resets) by
``storage.retry``: a multipart upload resends the one part that failed, a streaming read
resumes at the byte where it broke off. botocore's own retries are turned off on the clients
tierflow builds, so the configured policy is the only bound.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from contextlib import closing
from typing import Any, NoReturn, Unpack
from urllib.parse import urlparse, urlunparse

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from urllib3.exceptions import ProtocolError

from tierflow.config import MIN_S3_PART_SIZE, default
from tierflow.rsm import (
    ObjectInfo,
    RemoteResourceNotFoundError,
    RemoteStorageError,
    TransientStorageError,
)
from tierflow.storage.cloud_store import SHA256_FIELD, CloudObjectStore, CloudOptions, stored_info
from tierflow.storage.keys import normalize_prefix
from tierflow.storage.object_store import READ_CHUNK, Parts, is_valid_key
from tierflow.storage.retry import Attempts, is_transient, retry_call
from tierflow.storage.urls import shown_url

S3Client = Any  # a botocore S3 client: from S3Hook, or built by s3_handover.S3ClientSpec
log = logging.getLogger(__name__)

DELETE_BATCH = 1000  # DeleteObjects takes at most 1000 keys
MAX_PARTS = 10_000  # S3's limit per multipart upload
MAX_PART_SIZE = 5 * 1024**3
LIST_PAGE_SIZE = 1000  # ListObjectsV2's maximum
_NOT_FOUND = {"NoSuchKey", "NotFound", "404"}
_STORAGE_ERRORS = (BotoCoreError, ClientError)
# Below botocore: a body stream read (``iter_chunks``) can raise urllib3's errors directly.
_NETWORK_ERRORS = (ProtocolError, ConnectionError, TimeoutError)


def parse_s3_url(url: str) -> tuple[str, str]:
    """``s3://bucket[/prefix]`` -> (bucket, prefix ending in '/' or empty)."""
    parsed = urlparse(url)
    shown = shown_url(url)
    if "@" in url.partition("/")[0] or "@" in parsed.netloc:
        raise ValueError(
            f"{shown!r}: no credentials in the URL; they belong in the Airflow connection "
            "(TIERFLOW_AWS_CONN_ID)"
        )
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"{shown!r}: expected s3://bucket[/prefix]")
    if parsed.query or parsed.fragment:
        raise ValueError(f"{shown!r}: expected s3://bucket[/prefix], without query or fragment")
    return parsed.netloc, normalize_prefix(parsed.path)


def request_config(timeout_s: float = default("storage_timeout_s")) -> Config:
    """What tierflow sets on every S3 client, over the connection's own ``config_kwargs``:
    connect and read timeouts, so a hung request fails into a retry instead of hanging the
    task, and no botocore retries, so ``storage.retry`` alone bounds the attempts."""
    return Config(
        connect_timeout=timeout_s,
        read_timeout=timeout_s,
        retries={"mode": "standard", "total_max_attempts": 1},
    )


def hook_client(
    aws_conn_id: str = default("aws_conn_id"), timeout_s: float = default("storage_timeout_s")
) -> S3Client:
    """The S3 client of an Airflow connection (imported here: executors never get this far)."""
    from airflow.providers.amazon.aws.hooks.s3 import S3Hook

    hook = S3Hook(aws_conn_id=aws_conn_id)
    config = hook.config.merge(request_config(timeout_s))
    return hook.get_client_type(region_name=hook.region_name, config=config)


class S3ObjectStore(CloudObjectStore):
    def __init__(
        self,
        bucket: str,
        *,
        aws_conn_id: str = default("aws_conn_id"),
        client: S3Client | None = None,
        **options: Unpack[CloudOptions],
    ) -> None:
        super().__init__(options, default("s3_part_size"))
        if not MIN_S3_PART_SIZE <= self.part_size <= MAX_PART_SIZE:
            raise ValueError(
                f"S3 part size {self.part_size} outside [{MIN_S3_PART_SIZE}, {MAX_PART_SIZE}]"
            )
        self.bucket = bucket
        self.list_page_size = LIST_PAGE_SIZE
        self.client = client if client is not None else hook_client(aws_conn_id, self.timeout_s)

    def describe(self) -> str:
        """Bucket, prefix and endpoint; never credentials (userinfo is dropped from the URL)."""
        endpoint = urlparse(self.client.meta.endpoint_url)
        host = endpoint.hostname or ""
        host = f"[{host}]" if ":" in host else host
        netloc = f"{host}:{endpoint.port}" if endpoint.port else host
        public = urlunparse(endpoint._replace(netloc=netloc, query="", fragment=""))
        return f"s3://{self.bucket}/{self.prefix} at {public}"

    def _send(self, key: str, action: str, request: Any) -> Any:
        """One S3 request with the retry policy; ``key`` names it in logs and errors."""
        return retry_call(self.retry, key, action, request)

    # -- writes -------------------------------------------------------------------------------

    def _write(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        """Fill parts from the stream; the first full part with more data behind it starts a
        multipart upload, otherwise the whole object is one PUT (nothing is sent before the
        stream ends, so a failing producer leaves nothing behind)."""
        s3_key, parts = self._name(key), Parts(chunks, self.part_size)
        upload: _MultipartUpload | None = None
        try:
            for part in parts.full():
                if upload is None:
                    upload = _MultipartUpload(self, s3_key, key)
                upload.send(part)
            self._finish(key, s3_key, upload, bytes(parts.rest), parts.sha256())
        except BaseException as exc:
            _fail_upload(key, upload, exc)
        return parts.info(key)

    def _finish(
        self, key: str, s3_key: str, upload: _MultipartUpload | None, rest: bytes, sha256: str
    ) -> None:
        if upload is None:
            self._send(
                key,
                "upload",
                lambda: self.client.put_object(
                    Bucket=self.bucket, Key=s3_key, Body=rest, Metadata={SHA256_FIELD: sha256}
                ),
            )
            return
        upload.send(rest)
        upload.complete()
        self._tag_sha256(key, s3_key, sha256)

    def _tag_sha256(self, key: str, s3_key: str, sha256: str) -> None:
        """A tag holds the digest of a multipart object. The object is complete without it, so a
        store that refuses tags costs only the digest in ``stat``, never the upload."""
        try:
            self._send(
                key,
                "tag",
                lambda: self.client.put_object_tagging(
                    Bucket=self.bucket,
                    Key=s3_key,
                    Tagging={"TagSet": [{"Key": SHA256_FIELD, "Value": sha256}]},
                ),
            )
        except (*_STORAGE_ERRORS, RemoteStorageError) as exc:
            log.warning("%s: uploaded, but its sha256 tag was not stored: %s", key, exc)

    # -- reads --------------------------------------------------------------------------------

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes [start, end) in one ranged GET; past the end of the object there are none."""
        if start < 0:
            raise RemoteStorageError(key, f"read failed: negative start {start}")
        if end is not None and end <= start:
            if self.stat(key) is None:
                raise RemoteResourceNotFoundError(key, "no such object")
            return b""
        request = {"Bucket": self.bucket, "Key": self._name(key)}
        if start or end is not None:
            request["Range"] = f"bytes={start}-{'' if end is None else end - 1}"

        def get() -> bytes:
            response = self.client.get_object(**request)
            with closing(response["Body"]) as body:
                data = body.read()
            _check_length(key, response, data)
            return data

        try:
            return self._send(key, "read", get)
        except ClientError as exc:
            if _code(exc) == "InvalidRange":  # starts at or past the end (or the object is empty)
                return b""
            _raise_storage_error(key, "read", exc)
        except BotoCoreError as exc:
            _raise_storage_error(key, "read", exc)

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        """One streaming GET, so verifying a segment never holds it in memory. A transient
        failure mid-stream resumes with a ranged GET at the next byte, of the same version of
        the object (If-Match on its ETag): nothing is read twice, or from a different object."""
        request: dict[str, Any] = {"Bucket": self.bucket, "Key": self._name(key)}
        attempts = Attempts(self.retry, key, "read")
        position = 0
        while True:
            try:
                if position:
                    request["Range"] = f"bytes={position}-"
                response = self.client.get_object(**request)
                request.setdefault("IfMatch", response.get("ETag"))
                with closing(response["Body"]) as body:
                    for chunk in body.iter_chunks(chunk_size):
                        position += len(chunk)
                        yield chunk
                return
            except ClientError as exc:
                if _code(exc) == "InvalidRange":  # broke off right after the last byte
                    return
                self._retry_or_raise(attempts, key, exc)
            except (BotoCoreError, *_NETWORK_ERRORS) as exc:
                self._retry_or_raise(attempts, key, exc)

    @staticmethod
    def _retry_or_raise(attempts: Attempts, key: str, exc: Exception) -> None:
        try:
            attempts.failed(exc)
        except _STORAGE_ERRORS as permanent:
            _raise_storage_error(key, "read", permanent)

    def stat(self, key: str) -> ObjectInfo | None:
        s3_key = self._name(key)
        try:
            head = self._send(
                key, "stat", lambda: self.client.head_object(Bucket=self.bucket, Key=s3_key)
            )
        except ClientError as exc:
            if _code(exc) in _NOT_FOUND:
                return None
            _raise_storage_error(key, "stat", exc)
        except BotoCoreError as exc:
            _raise_storage_error(key, "stat", exc)
        sha256 = (head.get("Metadata") or {}).get(SHA256_FIELD)
        if sha256 is None and "-" in head.get("ETag", ""):  # a multipart object: see the tag
            sha256 = self._tagged_sha256(key, s3_key)
        return stored_info(key, head["ContentLength"], sha256, head.get("LastModified"))

    def _tagged_sha256(self, key: str, s3_key: str) -> str | None:
        try:
            tags = self._send(
                key,
                "read tags",
                lambda: self.client.get_object_tagging(Bucket=self.bucket, Key=s3_key),
            )["TagSet"]
        except (*_STORAGE_ERRORS, RemoteStorageError) as exc:
            log.debug("%s: no sha256 tag readable: %s", s3_key, exc)
            return None
        return next((t["Value"] for t in tags if t["Key"] == SHA256_FIELD), None)

    # -- deletes and listing ------------------------------------------------------------------

    def delete(self, keys: Iterable[str]) -> None:
        """DeleteObjects in batches of 1000; S3 reports a missing key as deleted, and any key it
        could not delete fails the call, named."""
        s3_keys = list(dict.fromkeys(self._name(key) for key in keys))
        for first in range(0, len(s3_keys), DELETE_BATCH):
            batch = s3_keys[first : first + DELETE_BATCH]
            try:
                failed = self._send(
                    self._unprefixed(batch[0]), "delete", lambda b=batch: self._delete_batch(b)
                )
            except _STORAGE_ERRORS as exc:
                _raise_storage_error(self._unprefixed(batch[0]), "delete", exc)
            if failed:
                error = failed[0]
                more = f" (and {len(failed) - 1} more keys)" if len(failed) > 1 else ""
                raise RemoteStorageError(
                    self._unprefixed(error.get("Key", batch[0])),
                    f"delete failed: {error.get('Code')}: {error.get('Message')}{more}",
                )

    def _delete_batch(self, batch: list[str]) -> list[dict[str, Any]]:
        """The keys S3 could not delete for good; a key it failed on transiently (S3 answers
        InternalError or SlowDown per key) fails the whole batch into a retry, which is safe
        because deleting is idempotent."""
        response = self.client.delete_objects(
            Bucket=self.bucket,
            Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True},
        )
        failed = [e for e in response.get("Errors") or [] if e.get("Code") not in _NOT_FOUND]
        for error in failed:
            if is_transient(ClientError({"Error": error}, "DeleteObjects")):
                raise TransientStorageError(
                    self._unprefixed(error.get("Key", batch[0])),
                    f"delete failed: {error.get('Code')}: {error.get('Message')}",
                )
        return failed

    def list(self, prefix: str = "") -> Iterator[str]:
        """Keys starting with ``prefix``, in S3's order (ascending UTF-8 bytes), a page per
        request; a failed page is requested again with the same continuation token."""
        if "\x00" in prefix:
            return
        what = prefix or "(bucket root)"
        request: dict[str, Any] = {
            "Bucket": self.bucket,
            "Prefix": self.prefix + prefix,
            "MaxKeys": self.list_page_size,
        }
        while True:
            try:
                page = self._send(what, "list", lambda: self.client.list_objects_v2(**request))
            except _STORAGE_ERRORS as exc:
                _raise_storage_error(what, "list", exc)
            for item in page.get("Contents") or []:
                key = self._unprefixed(item["Key"])
                if is_valid_key(key):  # e.g. a console's "folder/" marker is not ours
                    yield key
            if not page.get("IsTruncated"):
                return
            request["ContinuationToken"] = page["NextContinuationToken"]

    def _unprefixed(self, s3_key: str) -> str:
        return s3_key[len(self.prefix) :] if s3_key.startswith(self.prefix) else s3_key

    def incomplete_uploads(self, prefix: str = "") -> list[str]:
        """Keys with a multipart upload in progress (or abandoned by a killed writer)."""
        paginator = self.client.get_paginator("list_multipart_uploads")
        found = []
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
            found += [self._unprefixed(u["Key"]) for u in page.get("Uploads") or []]
        return found


class _MultipartUpload:
    """One multipart upload: started lazily, parts numbered from 1, each part retried on its
    own, aborted on failure."""

    def __init__(self, store: S3ObjectStore, s3_key: str, key: str) -> None:
        self.store, self.client, self.bucket = store, store.client, store.bucket
        self.s3_key, self.key = s3_key, key
        started = store._send(
            key,
            "start upload",
            lambda: self.client.create_multipart_upload(Bucket=self.bucket, Key=s3_key),
        )
        self.upload_id: str = started["UploadId"]
        self.parts: list[dict[str, Any]] = []

    def send(self, data: bytes) -> None:
        number = len(self.parts) + 1
        if number > MAX_PARTS:
            raise RemoteStorageError(
                self.key, f"more than {MAX_PARTS} parts: raise TIERFLOW_S3_PART_SIZE"
            )
        sent = self.store._send(
            self.key,
            f"upload of part {number}",
            lambda: self.client.upload_part(
                Bucket=self.bucket,
                Key=self.s3_key,
                UploadId=self.upload_id,
                PartNumber=number,
                Body=data,
            ),
        )
        self.parts.append({"PartNumber": number, "ETag": sent["ETag"]})

    def complete(self) -> None:
        """Complete, retried. When an earlier attempt completed but its answer was lost, S3
        knows the upload no more (NoSuchUpload); the object is there, and verification will
        read it back before anyone calls it FINISHED."""
        tries = 0

        def send() -> None:
            nonlocal tries
            tries += 1
            try:
                self.client.complete_multipart_upload(
                    Bucket=self.bucket,
                    Key=self.s3_key,
                    UploadId=self.upload_id,
                    MultipartUpload={"Parts": self.parts},
                )
            except ClientError as exc:
                if not (tries > 1 and _code(exc) == "NoSuchUpload"):
                    raise

        self.store._send(self.key, "complete upload", send)

    def abort(self) -> None:
        """Best effort: the upload's own error matters more. A bucket lifecycle rule
        (AbortIncompleteMultipartUpload) catches what a killed process leaves."""
        try:
            self.client.abort_multipart_upload(
                Bucket=self.bucket, Key=self.s3_key, UploadId=self.upload_id
            )
        except _STORAGE_ERRORS as exc:
            log.warning("%s: aborting upload %s failed: %s", self.key, self.upload_id, exc)


def _fail_upload(key: str, upload: _MultipartUpload | None, exc: BaseException) -> NoReturn:
    """Abort the multipart upload, then raise: an OSError (reading the source) or an S3 error
    as the project's storage error, anything else (the producer's own failure) unchanged."""
    if upload is not None:
        upload.abort()
    if isinstance(exc, OSError):  # as the local store reports it
        raise RemoteStorageError(key, f"write failed: {exc}") from exc
    if isinstance(exc, _STORAGE_ERRORS):
        _raise_storage_error(key, "upload", exc)
    raise exc


def _check_length(key: str, response: dict[str, Any], data: bytes) -> None:
    """A body shorter than its Content-Length is a broken transfer, not a short object."""
    expected = response.get("ContentLength")
    if expected is not None and len(data) != int(expected):
        raise TransientStorageError(
            key, f"read {len(data)} of {expected} bytes: the connection broke off"
        )


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _raise_storage_error(key: str, action: str, exc: BaseException) -> NoReturn:
    """The project's storage errors, naming the key; a missing object is not-found."""
    if isinstance(exc, ClientError):
        code = _code(exc)
        message = exc.response.get("Error", {}).get("Message") or str(exc)
        if code in _NOT_FOUND:
            raise RemoteResourceNotFoundError(key, "no such object") from exc
        raise RemoteStorageError(key, f"{action} failed: {code}: {message}") from exc
    raise RemoteStorageError(key, f"{action} failed: {exc}") from exc
