"""A new remote segment's COPY_SEGMENT_STARTED row, built one way for every writer of one.

The copy, the remote compaction, the diskless merge and the mirror of the brokers' metadata
topic each know a new segment by where it goes (a ``RemoteSegment``: id, partition, offsets)
and by what it holds (largest timestamp, leader epochs, size); the row takes both, so the
mapping from one to the other is written here once rather than once per writer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol, Required, TypedDict, Unpack

from tierflow.ids import new_kafka_uuid
from tierflow.metadata.segment_writes import EpochEntryLike, StartedSegment
from tierflow.rsm import RemoteSegment


class OffsetRange(Protocol):
    """The offsets a new segment holds, first and last."""

    @property
    def start_offset(self) -> int: ...

    @property
    def end_offset(self) -> int: ...


def fresh_segment(
    topic_name: str, topic_id: str, partition: int, offsets: OffsetRange
) -> RemoteSegment:
    """Where a new segment of ``offsets`` goes: under a fresh segment id, so that a rerun
    writes another segment rather than over one a reader may be using."""
    return RemoteSegment(
        topic_name, topic_id, partition, new_kafka_uuid(), offsets.start_offset, offsets.end_offset
    )


class SegmentContents(Protocol):
    """What a writer knows of a new segment's contents before its upload: the copy's
    ``SegmentFacts``, a diskless ``MergedSegment``, a broker's ``SegmentMetadata`` record, or a
    compaction group's ``SourceTotals``."""

    @property
    def max_timestamp_ms(self) -> int: ...

    @property
    def leader_epochs(self) -> Sequence[tuple[int, int] | EpochEntryLike]: ...

    @property
    def size_in_bytes(self) -> int: ...


class SourceTotals(NamedTuple):
    """Contents taken from the segments a new one replaces (the compaction's bound on it)."""

    max_timestamp_ms: int
    leader_epochs: list[tuple[int, int]]
    size_in_bytes: int


class StartedExtras(TypedDict, total=False):
    """The row's fields that differ by writer (``StartedSegment`` says what each defaults to)."""

    txn_index_empty: Required[bool]
    leader_epoch: int | None
    tiered_epoch: int | None
    owner: str | None
    custom_metadata: bytes | None
    writer: str


def started_segment(
    segment: RemoteSegment, contents: SegmentContents, **extras: Unpack[StartedExtras]
) -> StartedSegment:
    """The COPY_SEGMENT_STARTED row of ``segment``: keyed by its topic id (the name is the
    bucket's concern), its leader epochs as (epoch, start offset) pairs."""
    where = segment.identity()
    del where["topic"]
    return StartedSegment(
        **where,
        max_timestamp_ms=contents.max_timestamp_ms,
        segment_leader_epochs=[_pair(entry) for entry in contents.leader_epochs],
        segment_size_bytes=contents.size_in_bytes,
        **extras,
    )


def _pair(entry: tuple[int, int] | EpochEntryLike) -> tuple[int, int]:
    return entry if isinstance(entry, tuple) else (entry.epoch, entry.start_offset)
