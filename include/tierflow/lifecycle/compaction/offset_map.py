"""Pass one of a compaction: the latest record of every key, Kafka's offset map.

Kafka's cleaner (``LogCleaner.buildOffsetMap``) reads the dirty section and keeps, per key, the
offset of its last record; records of aborted transactions never enter the map, and records
without a key are dropped (a compacted topic refuses them at produce time). tierflow scans each
source segment on its own (the segments of a range are read in parallel) and merges the
segments' maps in offset order, later ones winning; Spark merges them by key instead, which is
the same.

A tombstone (a null value) is the latest record of its key until it expires: it is dropped,
and so its key leaves the log, once it is older than ``delete.retention.ms``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import tee
from typing import NamedTuple

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from tierflow.kafka.read_committed import batch_fates, is_abort_marker
from tierflow.kafka.record_batch import iter_batch_frames
from tierflow.kafka.txn_index import AbortedTxn


class Latest(NamedTuple):
    """A key's latest record so far (a tuple: pass one makes one per record)."""

    offset: int
    tombstone: bool
    timestamp: int


@dataclass
class SegmentScan:
    """What pass one learnt of one source segment."""

    segment_id: str
    latest: dict[bytes, Latest] = field(default_factory=dict)
    offsets: list[int] = field(default_factory=list)  # every keyed record that may stay
    dropped: int = 0  # batches or records that go whatever the map says
    markers: int = 0  # COMMIT markers, which stay

    def changed_by(self, kept: KeptOffsets) -> bool:
        """Whether the compaction leaves this segment other than it is."""
        return bool(self.dropped) or any(offset not in kept for offset in self.offsets)

    def keeps_any(self, kept: KeptOffsets) -> bool:
        return bool(self.markers) or any(offset in kept for offset in self.offsets)


def fated_frames(
    chunks: Iterable[bytes], aborted: Sequence[AbortedTxn], source: str
) -> Iterator[tuple[bytes, object, bool]]:
    """Each batch of a ``.log``: its bytes, kafka-python's view of it, and whether a
    read_committed consumer skips it (aborted data, control batches). ``aborted``: the
    transactions a fetch of this segment needs (``aborted_between`` its offsets)."""
    raws, frames = tee(raw for _position, raw in iter_batch_frames(chunks, source=source))
    batches = (MemoryRecords(raw).next_batch() for raw in frames)
    for raw, (batch, skipped) in zip(raws, batch_fates(batches, aborted), strict=True):
        yield raw, batch, skipped


def scan_segment(
    segment_id: str, chunks: Iterable[bytes], aborted: Sequence[AbortedTxn], source: str
) -> SegmentScan:
    """The segment's latest record per key, and what goes from it in any case."""
    scan = SegmentScan(segment_id)
    for raw, batch, skipped in fated_frames(chunks, aborted, source):
        if batch.magic >= 2 and batch.is_control_batch:
            if is_abort_marker(DefaultRecordBatch(raw)):  # the fate read it once
                scan.dropped += 1  # its transaction's records go: so does the marker
            else:
                scan.markers += 1
            continue
        if skipped:
            scan.dropped += 1
            continue
        for record in batch:
            if record.key is None:
                scan.dropped += 1
                continue
            scan.latest[record.key] = Latest(record.offset, record.value is None, record.timestamp)
            scan.offsets.append(record.offset)
    return scan


def merge_latest(maps: Iterable[dict[bytes, Latest]]) -> dict[bytes, Latest]:
    """The segments' maps, in offset order, merged: the later record of a key wins."""
    merged: dict[bytes, Latest] = {}
    for latest in maps:
        merged.update(latest)
    return merged


def later(a: Latest, b: Latest) -> Latest:
    """Spark's reduce by key: the record at the higher offset."""
    return a if a.offset > b.offset else b


def stays(latest: Latest, tombstone_horizon_ms: int) -> bool:
    """A key's latest record stays, unless it is a tombstone older than the horizon
    (now - delete.retention.ms)."""
    return not (latest.tombstone and latest.timestamp < tombstone_horizon_ms)


class KeptOffsets:
    """The offsets that stay, as a set and sorted: pass two asks how many of a batch's offsets
    stay, and a batch none or all of whose records stay needs no decoding at all."""

    def __init__(self, offsets: Iterable[int]) -> None:
        self._sorted = sorted(offsets)
        self._set = set(self._sorted)

    def __contains__(self, offset: object) -> bool:
        return offset in self._set

    def __len__(self) -> int:
        return len(self._sorted)

    def count_between(self, first: int, last: int) -> int:
        return bisect_right(self._sorted, last) - bisect_left(self._sorted, first)


def kept_offsets(merged: dict[bytes, Latest], tombstone_horizon_ms: int) -> KeptOffsets:
    return KeptOffsets(r.offset for r in merged.values() if stays(r, tombstone_horizon_ms))
