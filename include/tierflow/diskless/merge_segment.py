"""Writing a merged segment's files the way a broker writes a rolled segment.

The batches arrive in offset order with their offsets already injected (``read.inject``), so
the ``.log`` is byte for byte what a classic segment holds. Beside it, as Kafka's
``LogSegment.append`` and ``UnifiedLog.roll`` write them:

- ``.index``: an entry (the batch's last offset, the position of its start) once more than
  ``index.interval.bytes`` were appended since the previous entry;
- ``.timeindex``: at the same moments, the largest timestamp so far and the last offset of
  its batch, if that timestamp is larger than the last entry's; and once more at the roll;
- ``<next offset>.snapshot``: the producer state at the segment's end, which KIP-405 uploads
  with every segment. It is carried from segment to segment (and from the previous tiered
  segment's snapshot), so it holds every producer seen so far, as ProducerStateManager would.
  Diskless topics take no transactional batches, so entries never hold an open transaction.

The files are scratch: nothing reads them but the upload that follows, and a rerun after any
failure rebuilds them from the WAL. So they are not fsynced (the upload fsyncs what it stores);
the ``.log`` is written under a temporary name and renamed, so a complete-looking file is never
a half-written one.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.diskless.errors import WalFormatError
from tierflow.kafka.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    offset_prefix,
)
from tierflow.kafka.offset_index import OffsetPosition, offset_index_bytes
from tierflow.kafka.producer_snapshot import (
    ProducerSnapshotEntry,
    producer_snapshot_bytes,
    read_producer_snapshot,
)
from tierflow.kafka.time_index import TimeIndexBuilder, time_index_bytes

INDEX_INTERVAL_BYTES = 4096  # Kafka's index.interval.bytes default
NO_TXN = -1
# A v2 batch header up to the record count: base offset, length, partition leader epoch, magic,
# crc, attributes, last offset delta, base and max timestamp, producer id, epoch, base sequence.
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass
class ProducerState:
    """Each idempotent producer's last batch: what the snapshot at a segment's end holds."""

    entries: dict[int, ProducerSnapshotEntry] = field(default_factory=dict)

    @classmethod
    def from_snapshot(cls, data: bytes, scratch: Path) -> ProducerState:
        """The state a previous segment's uploaded snapshot recorded (checked as Kafka reads
        a snapshot file, through ``scratch``)."""
        scratch.write_bytes(data)
        try:
            entries = read_producer_snapshot(scratch)
        finally:
            scratch.unlink(missing_ok=True)
        return cls({entry.producer_id: entry for entry in entries})

    def append(
        self,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        base_offset: int,
        last_offset: int,
        max_timestamp: int,
    ) -> None:
        if producer_id < 0:
            return  # not an idempotent producer: no state
        previous = self.entries.get(producer_id)
        self.entries[producer_id] = ProducerSnapshotEntry(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            last_sequence=base_sequence + (last_offset - base_offset),
            last_offset=last_offset,
            offset_delta=last_offset - base_offset,
            timestamp=max_timestamp,
            coordinator_epoch=-1 if previous is None else previous.coordinator_epoch,
            current_txn_first_offset=NO_TXN,
        )

    def snapshot(self) -> list[ProducerSnapshotEntry]:
        """In producer id order, so that the same state always gives the same bytes."""
        return [self.entries[pid] for pid in sorted(self.entries)]


@dataclass(frozen=True)
class StagedSegment:
    """The files of one merged segment, ready for the copy lifecycle's upload."""

    log_path: Path
    offset_index_path: Path
    time_index_path: Path
    producer_snapshot_path: Path
    size_in_bytes: int
    next_offset: int


class SegmentWriter:
    """Append injected batches to ``<directory>/<base offset>.log`` and index them."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        producers: ProducerState,
        *,
        index_interval_bytes: int = INDEX_INTERVAL_BYTES,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.base_offset = base_offset
        self.next_offset = base_offset
        self.producers = producers
        self.index_interval_bytes = index_interval_bytes
        self._prefix = offset_prefix(base_offset)
        self._log_path = directory / (self._prefix + LOG_SUFFIX)
        self._tmp = self._log_path.with_name(self._log_path.name + ".tmp")
        self._out = open(self._tmp, "wb")  # noqa: SIM115 - closed by close()
        self._size = 0
        self._since_index_entry = 0
        self._offsets: list[OffsetPosition] = []
        self._times = TimeIndexBuilder()

    def append(self, batch: bytes, *, source: str) -> None:
        """One whole v2 batch, whose base offset must be the segment's next offset."""
        if len(batch) < _V2_HEADER.size:
            raise WalFormatError(source, 0, f"{len(batch)} bytes: shorter than a v2 batch header")
        fields = _V2_HEADER.unpack_from(batch)
        base, _length, _epoch, magic, _crc, _attrs, delta, _base_ts, max_ts = fields[:9]
        producer_id, producer_epoch, base_sequence = fields[9:12]
        if magic != 2 or base != self.next_offset:
            raise WalFormatError(
                source, 0, f"magic {magic} batch at offset {base}; expected {self.next_offset}"
            )
        last = base + delta
        self._times.observe(max_ts, last)
        if self._since_index_entry > self.index_interval_bytes:
            self._offsets.append(OffsetPosition(last, self._size))
            self._times.maybe_append()
            self._since_index_entry = 0
        self._since_index_entry += len(batch)
        self._out.write(batch)
        self._size += len(batch)
        self.next_offset = last + 1
        self.producers.append(producer_id, producer_epoch, base_sequence, base, last, max_ts)

    def close(self) -> StagedSegment:
        """Roll: the final time-index entry, the indexes, the snapshot at the next offset."""
        self._times.maybe_append()
        self._out.close()
        os.replace(self._tmp, self._log_path)
        index_path = self.directory / (self._prefix + INDEX_SUFFIX)
        index_path.write_bytes(offset_index_bytes(self.base_offset, self._offsets))
        time_path = self.directory / (self._prefix + TIME_INDEX_SUFFIX)
        time_path.write_bytes(time_index_bytes(self.base_offset, self._times.entries))
        snapshot_path = self.directory / (offset_prefix(self.next_offset) + SNAPSHOT_SUFFIX)
        snapshot_path.write_bytes(producer_snapshot_bytes(self.producers.snapshot()))
        return StagedSegment(
            log_path=self._log_path,
            offset_index_path=index_path,
            time_index_path=time_path,
            producer_snapshot_path=snapshot_path,
            size_in_bytes=self._size,
            next_offset=self.next_offset,
        )

    def abort(self) -> None:
        self._out.close()
        self._tmp.unlink(missing_ok=True)
