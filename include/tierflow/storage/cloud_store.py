"""What the cloud backends (S3, GCS, Azure Blob Storage) keep alike: their keys under a prefix
of the bucket, uploads in parts of one size, and every request retried by one policy."""

from __future__ import annotations

from datetime import datetime

from tierflow.rsm import ObjectInfo
from tierflow.storage.keys import normalize_prefix
from tierflow.storage.object_store import StreamingWrites, validate_key
from tierflow.storage.retry import RetryPolicy

SHA256_FIELD = "sha256"  # where each backend keeps an object's sha256: metadata, or S3's tag


class CloudObjectStore(StreamingWrites):
    """The settings every cloud store is built with; its requests are its own."""

    def __init__(self, prefix: str, part_size: int, retry: RetryPolicy | None) -> None:
        self.prefix = normalize_prefix(prefix)
        self.part_size = part_size
        self.retry = retry if retry is not None else RetryPolicy()

    def _name(self, key: str) -> str:
        """The bucket's name of ``key``: checked, under the prefix."""
        return self.prefix + validate_key(key)


def stored_info(key: str, size: int, sha256: str | None, modified: datetime | None) -> ObjectInfo:
    """What ``stat`` answers, from what the service says of the object (its last write as a
    datetime, kept in ms)."""
    modified_ms = int(modified.timestamp() * 1000) if modified is not None else None
    return ObjectInfo(key, int(size), sha256, last_modified_ms=modified_ms)
