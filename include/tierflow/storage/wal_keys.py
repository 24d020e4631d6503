"""Object keys of WAL segment objects: ``<prefix>diskless/wal/<uuid>``.

WAL objects hold batches of many partitions, so they live beside the per-partition tiered
layout (``<prefix><topic>-<id>/<partition>/...``, or ``<prefix>kafka-tiered-storage/...``)
rather than inside it; a UUID name means any writer can upload without coordinating with the
others (KIP-1163).
"""

from __future__ import annotations

import uuid

from tierflow.storage.keys import normalize_prefix

WAL_DIR = "diskless/wal/"


def wal_prefix(storage_prefix: str) -> str:
    """Where every WAL object of this bucket and prefix lives."""
    return f"{normalize_prefix(storage_prefix)}{WAL_DIR}"


def new_wal_object_key(storage_prefix: str) -> str:
    return f"{wal_prefix(storage_prefix)}{uuid.uuid4()}"


def is_wal_object_key(key: str, storage_prefix: str) -> bool:
    """True for keys of the shape this module hands out (for bucket sweeps and reconcile)."""
    where = wal_prefix(storage_prefix)
    if not key.startswith(where):
        return False
    try:
        uuid.UUID(key[len(where) :])
    except ValueError:
        return False
    return True
