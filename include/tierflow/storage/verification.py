"""Reading uploaded objects back: the check every storage manager runs before FINISHED, and
the restore before it writes a segment back."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from tierflow.rsm import ObjectInfo, VerificationError
from tierflow.storage.object_store import ObjectStore


def verify_objects(objects: ObjectStore, expected: Iterable[ObjectInfo]) -> None:
    """Raise VerificationError, naming the key, unless each object has the uploaded size and
    sha256: what was written is exactly what a later read will get."""
    for info in expected:
        found = objects.stat(info.key)
        if found is None:
            raise VerificationError(info.key, f"missing (uploaded {info.size} bytes)")
        if found.size != info.size:
            raise VerificationError(
                info.key, f"size {found.size} bytes, uploaded {info.size} bytes"
            )
        digest = hashlib.sha256()
        for chunk in objects.iter_chunks(info.key):
            digest.update(chunk)
        if digest.hexdigest() != info.sha256:
            raise VerificationError(
                info.key, f"sha256 {digest.hexdigest()} differs from uploaded {info.sha256}"
            )
