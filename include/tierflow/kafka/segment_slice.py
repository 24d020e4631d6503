"""The tail of a segment from an offset on, as a segment of its own with valid indexes.

A compacted partition's cleaner may merge segments that are already remote with later ones
(``lifecycle/copy/compacted.py``); the copy then takes only the merged segment's batches from
the first offset not yet remote. The slice starts at that offset (its base offset: offsets
below it are in the remote segment before), and its first batch may start later, as in any
compacted segment. Its indexes are the segment's own, rebased: entries at or after the first
kept batch, offsets relative to the new base and positions to the slice's first byte.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition, offset_index_bytes
from tierflow.kafka.segment import LogSegment
from tierflow.kafka.time_index import TimeIndex, time_index_bytes
from tierflow.kafka.txn_index import read_txn_index, txn_index_bytes


@dataclass(frozen=True)
class SegmentSlice:
    base_offset: int  # the slice's start: offsets below are not in it
    position: int  # where its first batch starts in the segment's .log
    size_in_bytes: int  # from there to the end of the .log
    offset_index: bytes
    time_index: bytes
    txn_index: bytes


def slice_segment(segment: LogSegment, from_offset: int) -> SegmentSlice:
    """The batches of ``segment`` whose offsets are all at or above ``from_offset``. A batch
    holding offsets on both sides means ``from_offset`` was never a batch boundary: refused,
    naming the file and position."""
    position = _first_position(segment, from_offset)
    size = segment.size_in_bytes() - position
    index = OffsetIndex.read(segment.index_path, segment.base_offset)
    offsets = [
        OffsetPosition(e.offset, e.position - position)
        for e in index.entries
        if e.position >= position
    ]
    times = TimeIndex.read(segment.time_index_path, segment.base_offset)
    stamps = [e for e in times.entries if e.offset >= from_offset]
    aborted = read_txn_index(segment.txn_index_path) if segment.has_txn_index() else []
    return SegmentSlice(
        base_offset=from_offset,
        position=position,
        size_in_bytes=size,
        offset_index=offset_index_bytes(from_offset, offsets),
        time_index=time_index_bytes(from_offset, stamps),
        txn_index=txn_index_bytes(t for t in aborted if t.last_offset >= from_offset),
    )


def _first_position(segment: LogSegment, from_offset: int) -> int:
    """The byte position of the first batch at or above ``from_offset`` (the end of the
    ``.log`` when there is none)."""
    for batch in segment.batches(validate_crc=False):
        if batch.base_offset >= from_offset:
            return batch.position
        if batch.last_offset >= from_offset:
            raise KafkaFormatError(
                str(segment.log_path),
                batch.position,
                f"batch {batch.base_offset}-{batch.last_offset} spans offset {from_offset}",
            )
    return segment.size_in_bytes()
