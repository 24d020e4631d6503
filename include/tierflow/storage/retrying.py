"""Retries for any ObjectStore, as a wrapper: whole requests sent again on transient errors.

The S3 store retries each of its requests itself (a part, a page, a resumed read), so it never
needs this. This wrapper is for a store whose failures come from outside its own requests: the
fault-injecting store the reliability tests put in front of a local bucket, and any backend
added later without retries of its own. Every operation is idempotent, so sending it again is
safe; a streamed upload is sent again only when its source was not consumed yet, because the
chunks read so far cannot be read twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from tierflow.rsm import ObjectInfo
from tierflow.storage.object_store import READ_CHUNK, ObjectStore
from tierflow.storage.retry import Attempts, RetryPolicy, retry_call


class RetryingObjectStore:
    def __init__(self, inner: ObjectStore, policy: RetryPolicy) -> None:
        self.inner = inner
        self.policy = policy

    def describe(self) -> str:
        return self.inner.describe()

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        return retry_call(self.policy, key, "upload", lambda: self.inner.put_file(key, source))

    def put_bytes(self, key: str, data: bytes) -> ObjectInfo:
        return retry_call(self.policy, key, "upload", lambda: self.inner.put_bytes(key, data))

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        source = _Tracked(chunks)
        attempts = Attempts(self.policy, key, "upload")
        while True:
            try:
                return self.inner.put_chunks(key, source)
            except Exception as exc:
                if source.started:
                    raise
                attempts.failed(exc)

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        return retry_call(self.policy, key, "read", lambda: self.inner.read_range(key, start, end))

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        """Resumes after a failure at the byte where the stream broke off."""
        attempts = Attempts(self.policy, key, "read")
        position = 0
        while True:
            try:
                skip = position
                for chunk in self.inner.iter_chunks(key, chunk_size):
                    if skip >= len(chunk):
                        skip -= len(chunk)
                        continue
                    chunk, skip = chunk[skip:], 0
                    position += len(chunk)
                    yield chunk
                return
            except Exception as exc:
                attempts.failed(exc)

    def stat(self, key: str) -> ObjectInfo | None:
        return retry_call(self.policy, key, "stat", lambda: self.inner.stat(key))

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        first = keys[0] if keys else "(no keys)"
        retry_call(self.policy, first, "delete", lambda: self.inner.delete(keys))

    def list(self, prefix: str = "") -> Iterator[str]:
        """Lists again after a failure, without yielding a key twice."""
        attempts = Attempts(self.policy, prefix or "(bucket root)", "list")
        seen: set[str] = set()
        while True:
            try:
                for key in self.inner.list(prefix):
                    if key not in seen:
                        seen.add(key)
                        yield key
                return
            except Exception as exc:
                attempts.failed(exc)


class _Tracked:
    """An iterable that remembers whether anyone took a chunk from it."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._chunks = iter(chunks)
        self.started = False

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            self.started = True
            yield chunk
