"""The bucket abstraction: keys to immutable blobs, with ranged reads and idempotent deletes."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from tierflow.rsm import InvalidKeyError, ObjectInfo, RemoteStorageError

READ_CHUNK = 1024 * 1024


def validate_key(key: str) -> str:
    """Every backend takes the same keys: relative, '/'-separated, no empty, '.' or '..' part
    and no NUL. A key that works on one backend then works on all, and none leaves a local root."""
    parts = key.split("/")
    if not key or key.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise InvalidKeyError(key, "keys are relative, '/'-separated, without '.' or '..'")
    if "\x00" in key:
        raise InvalidKeyError(key, "key contains a NUL byte")
    return key


def is_valid_key(key: str) -> bool:
    """Whether a listed name is one of our keys (a console's "folder/" marker is not)."""
    try:
        validate_key(key)
    except InvalidKeyError:
        return False
    return True


class ObjectStore(Protocol):
    def put_file(self, key: str, source: Path) -> ObjectInfo:
        """Upload a file; a retry simply overwrites. Returns size and sha256 of what was sent."""

    def put_bytes(self, key: str, data: bytes) -> ObjectInfo: ...

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        """Upload the concatenation of ``chunks`` as consumed, so a transformed segment is never
        held whole in memory. If the iterable raises, nothing is stored under ``key``."""

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes [start, end) of the object (end None: to the end)."""

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        """Stream the whole object, so callers never hold a segment in memory."""

    def stat(self, key: str) -> ObjectInfo | None:
        """Size and last-modified time of the object, or None when it does not exist; also the
        sha256 recorded at upload where the backend keeps one (S3), else None (local)."""

    def delete(self, keys: Iterable[str]) -> None:
        """Delete keys; a key that is already gone is a success."""

    def list(self, prefix: str = "") -> Iterator[str]: ...

    def describe(self) -> str:
        """Where the bucket is, for messages."""


class StreamingWrites:
    """The three upload forms as one stream, for backends that implement ``_write`` once."""

    def _write(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        raise NotImplementedError

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        if not Path(source).is_file():
            raise RemoteStorageError(key, f"cannot upload {source}: no such file")
        with open(source, "rb") as handle:
            return self._write(key, iter(lambda: handle.read(READ_CHUNK), b""))

    def put_bytes(self, key: str, data: bytes) -> ObjectInfo:
        return self._write(key, [data])

    def put_chunks(self, key: str, chunks: Iterable[bytes]) -> ObjectInfo:
        return self._write(key, chunks)


class Parts:
    """A write's chunks regrouped into parts of ``part_size`` (S3's parts, Azure's blocks),
    counted and hashed on the way, so every backend reports the same size and sha256."""

    def __init__(self, chunks: Iterable[bytes], part_size: int) -> None:
        self._chunks, self._part_size = chunks, part_size
        self.digest, self.size, self.rest = hashlib.sha256(), 0, bytearray()

    def full(self) -> Iterator[bytes]:
        """Each full part with more data behind it, as soon as it is; what is left once the
        chunks end (at most one part, maybe none) stays in ``rest``."""
        for chunk in self._chunks:
            self.digest.update(chunk)
            self.size += len(chunk)
            self.rest += chunk
            while len(self.rest) > self._part_size:
                yield bytes(self.rest[: self._part_size])
                del self.rest[: self._part_size]

    def sha256(self) -> str:
        return self.digest.hexdigest()

    def info(self, key: str) -> ObjectInfo:
        """What was written under ``key``: every chunk's bytes."""
        return ObjectInfo(key, self.size, self.sha256())


class PagedListing:
    """``list`` for backends that page with a continuation token (Azure, GCS): one page per
    request, sent through the backend's retrying ``_send``, so a failed page is asked for again
    with the same token and no key is yielded twice."""

    prefix: str

    def _send(self, key: str, action: str, request: Callable[[], Any]) -> Any:
        raise NotImplementedError

    def _page(self, prefix: str, token: str | None) -> tuple[list[str], str | None]:
        """The names of one page under ``self.prefix + prefix``, and the next page's token."""
        raise NotImplementedError

    def list(self, prefix: str = "") -> Iterator[str]:
        if "\x00" in prefix:
            return
        what, token = prefix or "(bucket root)", None
        while True:
            names, token = self._send(what, "list", partial(self._page, prefix, token))
            for name in names:
                key = name[len(self.prefix) :]
                if is_valid_key(key):
                    yield key
            if not token:
                return


def needs_no_request(
    store: ObjectStore, key: str, start: int, end: int | None, not_found: type[Exception]
) -> bool:
    """Whether ``read_range(key, start, end)`` is answered without a ranged read: a negative
    start is refused, an empty range is b"" for an object that exists (``not_found`` else)."""
    if start < 0:
        raise RemoteStorageError(key, f"read failed: negative start {start}")
    if end is None or end > start:
        return False
    if store.stat(key) is None:
        raise not_found(key, "no such object")
    return True
