"""KIP-405's RemoteStorageManager as a Python protocol, with the types its calls carry.

Kafka's contract, kept here: copying is idempotent (a retry overwrites), deleting is idempotent
(a missing object is a success), and a segment is fetched by byte positions. tierflow adds
``verify``: a copy is FINISHED only after every object reads back with the size and checksum
that was uploaded.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from tierflow.storage.keys import segment_key
from tierflow.storage.object_store import ObjectInfo


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

    def object_key(self, prefix: str, suffix: str) -> str:
        """This segment's object with ``suffix``, in the Aiven key layout (see keys.py)."""
        return segment_key(
            prefix,
            self.topic,
            self.topic_id,
            self.partition,
            self.start_offset,
            self.segment_id,
            suffix,
        )


@dataclass(frozen=True)
class LogSegmentData:
    """Kafka's LogSegmentData: the files of one rolled segment plus its leader-epoch entries."""

    log_segment: Path
    offset_index: Path
    time_index: Path
    transaction_index: Path | None
    producer_snapshot_index: Path
    leader_epoch_index: bytes


class RemoteStorageManager(Protocol):
    def copy_log_segment_data(
        self, segment: RemoteSegment, data: LogSegmentData
    ) -> list[ObjectInfo]:
        """Upload every file of the segment; return what was written (key, size, sha256)."""

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
