"""One resumable upload to Google Cloud Storage, fed a stream of unknown length.

google-resumable-media speaks the protocol (a session started by one POST, chunks PUT with
their Content-Range, a status query to learn how many bytes the server kept); this module
feeds it from tierflow's chunk streams and owns the retries. Only the chunk being sent is held
in memory: bytes leave the window once the session has confirmed them.
"""

from __future__ import annotations

import base64
import contextlib
import http
from typing import Any

import google_crc32c
from google.resumable_media import InvalidResponse, RetryStrategy
from google.resumable_media.requests import ResumableUpload

from tierflow.rsm import RemoteStorageError
from tierflow.storage.retry import Attempts, RetryPolicy, retry_call

CHUNK_MULTIPLE = 256 * 1024  # GCS takes chunks in multiples of 256 KiB, but for the last
CONTENT_TYPE = "application/octet-stream"
_FINALIZED = (http.HTTPStatus.OK, http.HTTPStatus.CREATED)


class ResumableWrite:
    """Feed it bytes, then ``finish`` (the object appears) or ``cancel`` (nothing does)."""

    def __init__(
        self, client: Any, bucket: str, name: str, key: str, *,
        part_size: int, retry: RetryPolicy, timeout_s: float,
    ) -> None:  # fmt: skip
        self.key, self.retry, self.timeout_s = key, retry, timeout_s
        self.chunk = max(CHUNK_MULTIPLE, part_size // CHUNK_MULTIPLE * CHUNK_MULTIPLE)
        self.window = _Window()
        self.transport = client._http  # the client's authorized session
        url = f"{client._connection.API_BASE_URL}/upload/storage/v1/b/{bucket}/o"
        self.upload = ResumableUpload(f"{url}?uploadType=resumable", self.chunk)
        self.upload._retry_strategy = RetryStrategy(max_retries=0)  # ours, below
        self.blob = client.bucket(bucket).blob(name)
        self.crc32c = google_crc32c.Checksum()
        self.generation: int | None = None
        self.finishing = self.cancelled = False
        start = self.upload.initiate
        begin = lambda: start(  # noqa: E731
            self.transport, self.window, {"name": name}, CONTENT_TYPE,
            stream_final=False, timeout=timeout_s,
        )  # fmt: skip
        retry_call(retry, key, "starting a resumable upload", begin)

    def feed(self, data: bytes) -> None:
        """Send every whole chunk there is; the rest waits for more bytes, or ``finish``."""
        self.window.append(data)
        self.crc32c.update(data)
        while self.window.unsent() >= self.chunk:
            self._send_chunk()

    def finish(self) -> int:
        """Send what is left as the last chunk; the object's generation."""
        self.finishing = True
        while self.generation is None:
            self._send_chunk()
        return self.generation

    def cancel(self) -> None:
        """Delete an unfinished session, so its bytes never become an object; a failure here
        only leaves them to GCS's one-week expiry of abandoned sessions."""
        if self.generation is not None or self.cancelled:
            return
        self.cancelled = True
        with contextlib.suppress(Exception):
            self.transport.delete(self.upload.resumable_url, timeout=self.timeout_s)

    def _send_chunk(self) -> None:
        part = self.upload.bytes_uploaded // self.chunk + 1
        attempts, failed = Attempts(self.retry, self.key, f"upload of chunk {part}"), False
        while True:
            try:
                if failed:  # resend from the offset the session reports
                    self._recover()
                if self.generation is not None:
                    return
                response = self.upload.transmit_next_chunk(self.transport, timeout=self.timeout_s)
                break
            except ValueError as exc:  # the stream and the session disagree: start over
                raise RemoteStorageError(self.key, f"upload failed: {exc}") from exc
            except Exception as exc:
                failed = True
                attempts.failed(exc)
        self.window.seek(self.upload.bytes_uploaded)  # the session may keep less than sent
        self.window.release(self.upload.bytes_uploaded)
        if self.upload.finished:
            self._finished(response.json())

    def _recover(self) -> None:
        """Ask the session how far it got. "Done" (or, once the last chunk went out, a session
        already gone) means the last chunk arrived and only its answer was lost: the object
        is then ours only if it holds exactly what was sent."""
        try:
            self.upload.recover(self.transport)
        except InvalidResponse as exc:
            status = exc.response.status_code
            if status in _FINALIZED:
                self._finished(exc.response.json())
            elif status == http.HTTPStatus.NOT_FOUND and self.finishing:
                self._finished(self._stored() or {})
            else:
                raise

    def _stored(self) -> dict[str, Any] | None:
        """The object now under the name, as the session's final answer would describe it."""
        found = self.blob.bucket.get_blob(self.blob.name, retry=None, timeout=self.timeout_s)
        if found is None:
            return None
        return {"generation": found.generation, "size": found.size, "crc32c": found.crc32c}

    def _finished(self, resource: dict[str, Any]) -> None:
        """Take the object the session made, after checking its length and CRC32C against
        what was sent; a damaged one (a body cut on the way) is deleted, never kept."""
        sent = base64.b64encode(self.crc32c.digest()).decode()
        if not resource:
            raise RemoteStorageError(self.key, "upload failed: the session ended without it")
        generation = int(resource["generation"])
        if int(resource.get("size", -1)) == self.window.end() and resource.get("crc32c") == sent:
            self.generation = generation
            self.window.release(self.window.end())
            return
        with contextlib.suppress(Exception):
            self.blob.delete(if_generation_match=generation, retry=None, timeout=self.timeout_s)
        raise RemoteStorageError(
            self.key, "upload failed: the stored object differs from what was sent (deleted)"
        )


class _Window:
    """The stream ResumableUpload reads: absolute positions, holding only unconfirmed bytes."""

    def __init__(self) -> None:
        self.base, self.position, self.buffer = 0, 0, bytearray()

    def append(self, data: bytes) -> None:
        self.buffer += data

    def end(self) -> int:
        return self.base + len(self.buffer)

    def unsent(self) -> int:
        return self.end() - self.position

    def release(self, upto: int) -> None:
        del self.buffer[: upto - self.base]
        self.base = upto
        self.position = max(self.position, upto)

    def tell(self) -> int:
        return self.position

    def seek(self, position: int, whence: int = 0) -> int:
        if not self.base <= position <= self.end():
            raise ValueError(f"seek to {position}: outside [{self.base}, {self.end()}]")
        self.position = position
        return position

    def read(self, size: int = -1) -> bytes:
        start = self.position - self.base
        stop = len(self.buffer) if size < 0 else start + size
        data = bytes(self.buffer[start:stop])
        self.position += len(data)
        return data
