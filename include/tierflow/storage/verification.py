"""Reading uploaded objects back: the check every storage manager runs before FINISHED, and
the restore before it writes a segment back."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from tierflow.rsm import ObjectInfo, VerificationError
from tierflow.storage.object_store import READ_CHUNK, ObjectStore


def verify_objects(objects: ObjectStore, expected: Iterable[ObjectInfo]) -> None:
    """Raise VerificationError, naming the key, unless each object has the uploaded size and
    sha256: what was written is exactly what a later read will get. Through ``Digesting``
    objects, an object already read whole is not read again."""
    for info in verify_sizes(objects, expected):
        digest = objects.sha256(info) if isinstance(objects, Digesting) else None
        if digest is None:
            digest = _sha256(objects, info.key)
        if digest != info.sha256:
            raise VerificationError(
                info.key, f"sha256 {digest} differs from uploaded {info.sha256}"
            )


def verify_sizes(objects: ObjectStore, expected: Iterable[ObjectInfo]) -> list[ObjectInfo]:
    """``expected``, once each object is found with its uploaded size (else VerificationError)."""
    checked = []
    for info in expected:
        found = objects.stat(info.key)
        if found is None:
            raise VerificationError(info.key, f"missing (uploaded {info.size} bytes)")
        if found.size != info.size:
            raise VerificationError(
                info.key, f"size {found.size} bytes, uploaded {info.size} bytes"
            )
        checked.append(info)
    return checked


def _sha256(objects: ObjectStore, key: str) -> str:
    digest = hashlib.sha256()
    for chunk in objects.iter_chunks(key):
        digest.update(chunk)
    return digest.hexdigest()


class Digesting:
    """An object store read through, hashing each object that is read from its first byte on,
    in order (a decode pass: chunk after chunk). The scrubber decodes through it, then
    ``verify_objects`` takes the hashes instead of reading each object a second time; an
    object read out of order or in part is read again there."""

    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects
        self._hashes: dict[str, Any] = {}
        self._next: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.objects, name)  # writes, stat, list: the store's own

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        data = self.objects.read_range(key, start, end)
        self._saw(key, start, data)
        return data

    def iter_chunks(self, key: str, chunk_size: int = READ_CHUNK) -> Iterator[bytes]:
        at = 0
        for chunk in self.objects.iter_chunks(key, chunk_size):
            self._saw(key, at, chunk)
            at += len(chunk)
            yield chunk

    def sha256(self, info: ObjectInfo) -> str | None:
        """The hash of the whole object as read, or None: not read whole, in order."""
        whole = self._next.get(info.key) == info.size
        return self._hashes[info.key].hexdigest() if whole else None

    def _saw(self, key: str, start: int, data: bytes) -> None:
        if start == 0 and key not in self._next:
            self._hashes[key], self._next[key] = hashlib.sha256(), 0
        if self._next.get(key) == start:
            self._hashes[key].update(data)
            self._next[key] = start + len(data)
        else:
            self._next[key] = -1  # out of order: read again to hash
