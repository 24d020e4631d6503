"""KIP-405's RemoteStorageManager as a Python protocol, with the types and errors its calls carry.

The bottom of tierflow's own layers: it imports nothing of tierflow, so the transforms, the
storage backends, the metadata store and the read path all speak these types without importing
each other.

Kafka's contract, kept here: copying is idempotent (a retry overwrites), deleting is idempotent
(a missing object is a success), and a segment is fetched by byte positions. tierflow adds
``verify``: a copy is FINISHED only after every object reads back with the size and checksum
that was uploaded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

# Storage errors always name the key, so an operator can find the object.


class RemoteStorageError(Exception):
    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


class RemoteResourceNotFoundError(RemoteStorageError):
    """The object does not exist (Kafka's RemoteResourceNotFoundException)."""


class VerificationError(RemoteStorageError):
    """An uploaded object does not match what was uploaded: the copy must not be FINISHED."""


class InvalidKeyError(RemoteStorageError):
    """A key that would escape the bucket root or is otherwise unusable."""


class TransientStorageError(RemoteStorageError):
    """A failure that may pass (a timeout, a dropped connection, a 5xx): worth retrying."""


@dataclass(frozen=True)
class ObjectInfo:
    """One stored object as written or listed: key, size, and what is known of its contents."""

    key: str
    size: int
    sha256: str | None = None
    # When the object was last written (ms since the epoch), as ``stat`` reports it; None when
    # unknown. Reconciliation deletes an unreferenced object only once it is old enough.
    last_modified_ms: int | None = None


class IndexType(StrEnum):
    """Kafka's RemoteStorageManager.IndexType."""

    OFFSET = "OFFSET"
    TIMESTAMP = "TIMESTAMP"
    PRODUCER_SNAPSHOT = "PRODUCER_SNAPSHOT"
    TRANSACTION = "TRANSACTION"
    LEADER_EPOCH = "LEADER_EPOCH"


@dataclass(frozen=True)
class RemoteSegment:
    """The part of RemoteLogSegmentMetadata that a storage manager needs to find objects."""

    topic: str
    topic_id: str
    partition: int
    segment_id: str
    start_offset: int
    end_offset: int

    def describe(self) -> str:
        return (
            f"{self.topic}-{self.partition} segment {self.segment_id} "
            f"(offsets {self.start_offset}-{self.end_offset})"
        )

    def identity(self) -> dict[str, Any]:
        """The fields above by name, also on a subclass that carries more: how the types that
        extend a segment (a manifest's metadata, a rewrite job) are built from one."""
        return {f.name: getattr(self, f.name) for f in fields(RemoteSegment)}


@dataclass(frozen=True)
class LogSegmentData:
    """Kafka's LogSegmentData: the files of one rolled segment plus its leader-epoch entries."""

    log_segment: Path
    offset_index: Path
    time_index: Path
    transaction_index: Path | None
    producer_snapshot_index: Path
    leader_epoch_index: bytes
    # A compacted segment's tail from this offset on (kafka/segment_slice.py); None: whole.
    slice_from: int | None = None
    # Sees the ``.log``'s bytes as the upload reads them: the copy checks the batches in the
    # same pass (lifecycle/copy/segment_scan.py), so every byte is read once.
    observer: ChunkObserver | None = field(default=None, compare=False)


class ChunkObserver(Protocol):
    def watch(self, chunks: Iterable[bytes], start: int) -> Iterator[bytes]:
        """``chunks`` (the ``.log`` from byte ``start``) passed on unchanged; raising fails the
        upload."""
        ...


@dataclass(frozen=True)
class SegmentFiles:
    """A segment's files other than its ``.log``, as the bytes that are uploaded (the offset and
    time indexes as their valid entries, without a preallocated zero tail)."""

    offset_index: bytes
    time_index: bytes
    transaction_index: bytes | None
    producer_snapshot_index: bytes
    leader_epoch_index: bytes


@dataclass(frozen=True)
class LogSegmentStream:
    """A segment as its upload reads it: the ``.log`` as byte strings of any size, then the other
    files. A diskless merge builds the segment while it is uploaded, so ``files`` may be asked
    only once the last ``.log`` byte has been read; raising there fails the copy."""

    log_chunks: Iterable[bytes]
    files: Callable[[], SegmentFiles]


class RemoteStorageManager(Protocol):
    def copy_log_segment_data(
        self, segment: RemoteSegment, data: LogSegmentData
    ) -> list[ObjectInfo]:
        """Upload every file of the segment; return what was written (key, size, sha256)."""

    def copy_log_segment_stream(
        self, segment: RemoteSegment, stream: LogSegmentStream
    ) -> list[ObjectInfo]:
        """The same upload from a stream: each byte is read once, and nothing is staged."""

    def verify(self, segment: RemoteSegment, expected: list[ObjectInfo]) -> None:
        """Raise VerificationError unless every object reads back as uploaded."""

    def fetch_log_segment(
        self, segment: RemoteSegment, start_position: int, end_position: int | None = None
    ) -> bytes:
        """Bytes of the .log from start_position to end_position inclusive (Kafka's contract)."""

    def iter_log_segment(self, segment: RemoteSegment) -> Iterator[bytes]:
        """The whole .log as a stream of chunks."""

    def fetch_index(self, segment: RemoteSegment, index_type: IndexType) -> bytes:
        """One index; a missing optional transaction index raises RemoteResourceNotFoundError."""

    def delete_log_segment_data(self, segment: RemoteSegment) -> None:
        """Delete every object of the segment; objects already gone are fine."""

    def object_keys(self, segment: RemoteSegment) -> list[str]:
        """Every key this manager may write for the segment, for cleanup and reconciliation."""

    def reading_through(self, wrap: Callable[[Any], Any]) -> RemoteStorageManager:
        """The same manager over ``wrap(its object store)`` (a ``storage.ObjectStore``, named
        loosely here, a layer below storage), with nothing cached: the scrubber hashes what
        its decoding reads, so each byte is read once."""
