"""What the cloud backends (S3, GCS, Azure Blob Storage) keep alike: their keys under a prefix
of the bucket, uploads in parts of one size, and every request retried by one policy."""

from __future__ import annotations

from datetime import datetime
from typing import TypedDict

from tierflow.config import default
from tierflow.rsm import ObjectInfo
from tierflow.storage.keys import normalize_prefix
from tierflow.storage.object_store import StreamingWrites, validate_key
from tierflow.storage.retry import RetryPolicy

SHA256_FIELD = "sha256"  # where each backend keeps an object's sha256: metadata, or S3's tag


class ConnectionOptions(TypedDict, total=False):
    """How a cloud store talks to its service, whichever the service: the size of an upload's
    parts, the retry policy of every request and each request's timeout."""

    part_size: int
    retry: RetryPolicy | None
    timeout_s: float


class CloudOptions(ConnectionOptions, total=False):
    """What every cloud store's constructor takes besides its bucket, its connection's id and
    its client: one declaration, so the three stores take them alike."""

    prefix: str


class CloudObjectStore(StreamingWrites):
    """The settings every cloud store is built with; its requests are its own."""

    def __init__(self, options: CloudOptions, default_part_size: int) -> None:
        """``options`` as the store's constructor was given them (see CloudOptions); what is
        not given takes its default, the part size the backend's own."""
        unknown = [name for name in options if name not in CloudOptions.__annotations__]
        if unknown:  # as Python refuses a keyword the constructor does not name
            name = unknown[0]
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument {name!r}"
            )
        self.prefix = normalize_prefix(options.get("prefix", ""))
        self.part_size = options.get("part_size", default_part_size)
        retry = options.get("retry")
        self.retry = retry if retry is not None else RetryPolicy()
        self.timeout_s: float = options.get("timeout_s", default("storage_timeout_s"))

    def _name(self, key: str) -> str:
        """The bucket's name of ``key``: checked, under the prefix."""
        return self.prefix + validate_key(key)


def stored_info(key: str, size: int, sha256: str | None, modified: datetime | None) -> ObjectInfo:
    """What ``stat`` answers, from what the service says of the object (its last write as a
    datetime, kept in ms)."""
    modified_ms = int(modified.timestamp() * 1000) if modified is not None else None
    return ObjectInfo(key, int(size), sha256, last_modified_ms=modified_ms)
