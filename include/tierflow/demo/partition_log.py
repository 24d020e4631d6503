"""The broker's append path for one partition: segments, rolls and everything written beside them.

It follows Kafka's ``LogSegment.append`` / ``UnifiedLog.roll``: a segment rolls before an append
that would push it past ``segment.bytes``; an index entry (last offset of the batch, position of
its start) is added once more than ``index.interval.bytes`` were appended since the previous one;
a roll trims the indexes, adds the final time-index entry and snapshots producer state under the
new segment's base offset. The active segment keeps Kafka's preallocated, zero-filled indexes.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch

from tierflow.demo.producer_state import DataBatchInfo, MarkerInfo, ProducerStateTracker
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    write_leader_epoch_checkpoint,
)
from tierflow.kafka.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_prefix,
)
from tierflow.kafka.offset_index import OffsetPosition, write_offset_index
from tierflow.kafka.producer_snapshot import write_producer_snapshot
from tierflow.kafka.time_index import TimeIndexBuilder, write_time_index
from tierflow.kafka.txn_index import AbortedTxn, write_txn_index

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12
_MARKER_VALUE = struct.Struct(">hi")


@dataclass
class _Segment:
    """In-memory state of the segment being appended to (Kafka keeps the same in LogSegment)."""

    base_offset: int
    data: bytearray = field(default_factory=bytearray)
    batch_offsets: list[int] = field(default_factory=list)
    offset_entries: list[OffsetPosition] = field(default_factory=list)
    times: TimeIndexBuilder = field(default_factory=TimeIndexBuilder)
    aborted: list[AbortedTxn] = field(default_factory=list)
    bytes_since_index_entry: int = 0


@dataclass(frozen=True)
class SegmentLayout:
    """What ended up in one segment, for the caller's bookkeeping."""

    base_offset: int
    batch_base_offsets: tuple[int, ...]
    size_in_bytes: int
    aborted: tuple[AbortedTxn, ...]


@dataclass(frozen=True)
class PartitionLayout:
    """The finished partition: segments in order (the last one active) and its epochs."""

    segments: tuple[SegmentLayout, ...]
    log_end_offset: int
    leader_epochs: tuple[EpochEntry, ...]


class PartitionLogWriter:
    """Append broker-shaped batches to ``directory``, rolling segments like Kafka does."""

    def __init__(
        self,
        directory: Path,
        *,
        log_start_offset: int,
        segment_bytes: int,
        index_interval_bytes: int,
        preallocated_index_bytes: int,
    ) -> None:
        self.directory = directory
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.preallocated_index_bytes = preallocated_index_bytes
        self.next_offset = log_start_offset
        self._active = _Segment(base_offset=log_start_offset)
        self._rolled: list[SegmentLayout] = []
        self._epochs: list[EpochEntry] = []
        self._producers = ProducerStateTracker()
        directory.mkdir(parents=True, exist_ok=False)

    @property
    def rolled_segments(self) -> int:
        return len(self._rolled)

    @property
    def active_size(self) -> int:
        return len(self._active.data)

    def would_roll(self, batch_size: int) -> bool:
        """LogSegment.shouldRoll on size: a non-empty segment never exceeds segment.bytes."""
        return self.active_size > 0 and self.active_size + batch_size > self.segment_bytes

    def append(self, batch: bytes) -> None:
        """Append one batch whose base offset must be the log end offset."""
        header = DefaultRecordBatch(batch)
        if header.base_offset != self.next_offset:
            raise ValueError(
                f"{self.directory}: batch base offset {header.base_offset} is not the log end "
                f"offset {self.next_offset}"
            )
        if len(batch) > self.segment_bytes:
            raise ValueError(
                f"{self.directory}: a {len(batch)}-byte batch exceeds segment.bytes "
                f"{self.segment_bytes}"
            )
        if self.would_roll(len(batch)):
            self._roll()
        self._assign_epoch(header.leader_epoch, header.base_offset)
        self._append_to_segment(header, batch)
        self._update_producer_state(header)
        self.next_offset = header.last_offset + 1

    def close(self) -> PartitionLayout:
        """Write the active segment as a running broker has it, plus the epoch checkpoint."""
        active = self._active
        self._write_segment(active, preallocate=True)
        write_leader_epoch_checkpoint(self.directory / LEADER_EPOCH_CHECKPOINT, self._epochs)
        segments = (*self._rolled, _layout(active))
        return PartitionLayout(
            segments=segments, log_end_offset=self.next_offset, leader_epochs=tuple(self._epochs)
        )

    def _assign_epoch(self, epoch: int, offset: int) -> None:
        """LeaderEpochFileCache.assign: a new entry whenever a batch carries a newer epoch."""
        if self._epochs and epoch < self._epochs[-1].epoch:
            raise ValueError(
                f"{self.directory}: batch at offset {offset} has leader epoch {epoch}, "
                f"older than {self._epochs[-1].epoch}"
            )
        if not self._epochs or epoch > self._epochs[-1].epoch:
            self._epochs.append(EpochEntry(epoch=epoch, start_offset=offset))

    def _append_to_segment(self, header: DefaultRecordBatch, batch: bytes) -> None:
        segment = self._active
        position = len(segment.data)
        segment.times.observe(header.max_timestamp, header.last_offset)
        if segment.bytes_since_index_entry > self.index_interval_bytes:
            segment.offset_entries.append(OffsetPosition(header.last_offset, position))
            segment.times.maybe_append()
            segment.bytes_since_index_entry = 0
        segment.bytes_since_index_entry += len(batch)
        segment.data += batch
        segment.batch_offsets.append(header.base_offset)

    def _update_producer_state(self, header: DefaultRecordBatch) -> None:
        if not header.is_control_batch:
            self._producers.append_data(
                DataBatchInfo(
                    producer_id=header.producer_id,
                    producer_epoch=header.producer_epoch,
                    base_sequence=header.base_sequence,
                    base_offset=header.base_offset,
                    last_offset=header.last_offset,
                    max_timestamp=header.max_timestamp,
                    transactional=header.is_transactional,
                )
            )
            return
        control = next(iter(header))
        _version, coordinator_epoch = _parse_marker_value(control.value)
        aborted = self._producers.append_marker(
            MarkerInfo(
                producer_id=header.producer_id,
                producer_epoch=header.producer_epoch,
                offset=header.base_offset,
                timestamp=header.max_timestamp,
                coordinator_epoch=coordinator_epoch,
                commit=control.commit,
            )
        )
        if aborted is not None:
            # Kafka indexes the abort in the segment that holds its marker.
            self._active.aborted.append(aborted)

    def _roll(self) -> None:
        """Close the active segment and snapshot producer state at the new base offset."""
        finished = self._active
        finished.times.maybe_append()
        self._write_segment(finished, preallocate=False)
        snapshot = self.directory / (offset_prefix(self.next_offset) + SNAPSHOT_SUFFIX)
        write_producer_snapshot(snapshot, self._producers.snapshot())
        self._rolled.append(_layout(finished))
        self._active = _Segment(base_offset=self.next_offset)

    def _write_segment(self, segment: _Segment, *, preallocate: bool) -> None:
        prefix = self.directory / offset_prefix(segment.base_offset)
        log_path = prefix.with_name(prefix.name + LOG_SUFFIX)
        log_path.write_bytes(bytes(segment.data))
        index_path = prefix.with_name(prefix.name + INDEX_SUFFIX)
        write_offset_index(index_path, segment.base_offset, segment.offset_entries)
        time_index_path = prefix.with_name(prefix.name + TIME_INDEX_SUFFIX)
        write_time_index(time_index_path, segment.base_offset, segment.times.entries)
        if segment.aborted:
            txn_index_path = prefix.with_name(prefix.name + TXN_INDEX_SUFFIX)
            write_txn_index(txn_index_path, segment.aborted)
        if preallocate:
            _preallocate(index_path, self.preallocated_index_bytes, OFFSET_INDEX_ENTRY_SIZE)
            _preallocate(time_index_path, self.preallocated_index_bytes, TIME_INDEX_ENTRY_SIZE)


def _layout(segment: _Segment) -> SegmentLayout:
    return SegmentLayout(
        base_offset=segment.base_offset,
        batch_base_offsets=tuple(segment.batch_offsets),
        size_in_bytes=len(segment.data),
        aborted=tuple(segment.aborted),
    )


def _parse_marker_value(value: bytes | None) -> tuple[int, int]:
    """EndTransactionMarker value: version int16, coordinator epoch int32."""
    if value is None or len(value) < _MARKER_VALUE.size:
        raise ValueError("transaction marker without a (version, coordinator epoch) value")
    version, coordinator_epoch = _MARKER_VALUE.unpack_from(value)
    return version, coordinator_epoch


def _preallocate(path: Path, max_bytes: int, entry_size: int) -> None:
    """Extend an active index with zeros to its preallocated size, as Kafka's mmap does.

    Kafka rounds segment.index.bytes down to a whole number of entries.
    """
    size = max_bytes - max_bytes % entry_size
    if path.stat().st_size > size:
        raise ValueError(f"{path}: {path.stat().st_size} bytes of entries exceed {size}")
    os.truncate(path, size)
