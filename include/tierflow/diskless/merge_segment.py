"""Building a merged segment's files the way a broker writes a rolled segment.

The batches arrive in offset order with their offsets already injected (``read.inject``), so
the ``.log`` is byte for byte what a classic segment holds. The builder sees each batch on its
way to the upload and builds what a broker writes beside it:

- ``.index`` and ``.timeindex``, as ``kafka.index_builder`` builds them;
- ``<next offset>.snapshot``: the producer state at the segment's end, which KIP-405 uploads
  with every segment. It is carried from segment to segment (and from the previous tiered
  segment's snapshot), so it holds every producer seen so far, as ProducerStateManager would.
  Diskless topics take no transactional batches, so entries never hold an open transaction.

Nothing is written to local disk: the ``.log`` streams into the upload as it is built, and the
other files are bytes handed to the upload once the last batch has passed. A rerun after any
failure rebuilds the segment from the WAL.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.diskless.errors import WalFormatError
from tierflow.kafka.index_builder import INDEX_INTERVAL_BYTES, SegmentIndexBuilder
from tierflow.kafka.producer_snapshot import (
    ProducerSnapshotEntry,
    producer_snapshot_bytes,
    producer_snapshot_entries,
)
from tierflow.rsm import SegmentFiles

NO_TXN = -1
# A v2 batch header up to the record count: base offset, length, partition leader epoch, magic,
# crc, attributes, last offset delta, base and max timestamp, producer id, epoch, base sequence.
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")


@dataclass
class ProducerState:
    """Each idempotent producer's last batch: what the snapshot at a segment's end holds."""

    entries: dict[int, ProducerSnapshotEntry] = field(default_factory=dict)

    @classmethod
    def from_snapshot(cls, data: bytes, source: str | Path = "snapshot") -> ProducerState:
        """The state a previous segment's uploaded snapshot recorded, checked as Kafka reads
        a snapshot file; ``source`` names it in errors."""
        entries = producer_snapshot_entries(data, source)
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


class SegmentBuilder:
    """Index the injected batches of the segment starting at ``base_offset`` as they pass."""

    def __init__(
        self,
        base_offset: int,
        producers: ProducerState,
        *,
        index_interval_bytes: int = INDEX_INTERVAL_BYTES,
    ) -> None:
        self.next_offset = base_offset
        self.producers = producers
        self._indexes = SegmentIndexBuilder(base_offset, index_interval_bytes)

    @property
    def size_in_bytes(self) -> int:
        return self._indexes.size_in_bytes

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
        self._indexes.append(last, max_ts, len(batch))
        self.next_offset = last + 1
        self.producers.append(producer_id, producer_epoch, base_sequence, base, last, max_ts)

    def roll(self, leader_epoch_index: bytes) -> SegmentFiles:
        """The files of the rolled segment: the final time-index entry, the indexes, and the
        producer snapshot at the next offset."""
        offset_index, time_index = self._indexes.roll()
        return SegmentFiles(
            offset_index=offset_index,
            time_index=time_index,
            transaction_index=None,  # diskless topics take no transactional batches
            producer_snapshot_index=producer_snapshot_bytes(self.producers.snapshot()),
            leader_epoch_index=leader_epoch_index,
        )
