"""The broker's view of producers on one partition, as ProducerStateManager keeps it.

Producer snapshots and the transaction index are derived from this state, and tiered storage
uploads both with every segment, so the generator must compute them the way Kafka does: the
snapshot at a roll holds each producer's last batch, and an aborted transaction records the
last stable offset of the moment it was aborted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tierflow.kafka.producer_snapshot import ProducerSnapshotEntry
from tierflow.kafka.txn_index import AbortedTxn

NO_TXN = -1


@dataclass(frozen=True)
class DataBatchInfo:
    """The header fields of a producer's data batch that producer state depends on."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    transactional: bool


@dataclass(frozen=True)
class MarkerInfo:
    """A COMMIT or ABORT marker appended for ``producer_id``."""

    producer_id: int
    producer_epoch: int
    offset: int
    timestamp: int
    coordinator_epoch: int
    commit: bool


class ProducerStateError(ValueError):
    """A batch a broker would refuse (out-of-order sequence, fenced epoch, stray marker)."""


class ProducerStateTracker:
    """Producer entries and ongoing transactions of one partition."""

    def __init__(self) -> None:
        self._entries: dict[int, ProducerSnapshotEntry] = {}

    def append_data(self, batch: DataBatchInfo) -> None:
        """Record a data batch; non-idempotent batches (producer id -1) carry no state."""
        if batch.producer_id < 0:
            return
        previous = self._entries.get(batch.producer_id)
        self._check_sequence(previous, batch)
        txn_first = NO_TXN if previous is None else previous.current_txn_first_offset
        if batch.transactional and txn_first == NO_TXN:
            txn_first = batch.base_offset
        self._entries[batch.producer_id] = ProducerSnapshotEntry(
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            last_sequence=batch.base_sequence + (batch.last_offset - batch.base_offset),
            last_offset=batch.last_offset,
            offset_delta=batch.last_offset - batch.base_offset,
            timestamp=batch.max_timestamp,
            coordinator_epoch=-1 if previous is None else previous.coordinator_epoch,
            current_txn_first_offset=txn_first,
        )

    def append_marker(self, marker: MarkerInfo) -> AbortedTxn | None:
        """Complete the producer's transaction; return its .txnindex entry if it aborted."""
        entry = self._entries.get(marker.producer_id)
        if entry is None or entry.current_txn_first_offset == NO_TXN:
            raise ProducerStateError(
                f"marker at offset {marker.offset}: producer {marker.producer_id} "
                "has no ongoing transaction"
            )
        aborted = None
        if not marker.commit:
            aborted = AbortedTxn(
                producer_id=marker.producer_id,
                first_offset=entry.current_txn_first_offset,
                last_offset=marker.offset,
                last_stable_offset=self._last_stable_offset(marker),
            )
        # A marker updates epoch, coordinator epoch and timestamp but not the last data batch.
        self._entries[marker.producer_id] = replace(
            entry,
            producer_epoch=marker.producer_epoch,
            timestamp=marker.timestamp,
            coordinator_epoch=marker.coordinator_epoch,
            current_txn_first_offset=NO_TXN,
        )
        return aborted

    def snapshot(self) -> list[ProducerSnapshotEntry]:
        """Entries in producer id order, so the snapshot bytes are reproducible."""
        return [self._entries[pid] for pid in sorted(self._entries)]

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest ongoing transaction (it caps the last stable offset)."""
        open_firsts = [
            entry.current_txn_first_offset
            for entry in self._entries.values()
            if entry.current_txn_first_offset != NO_TXN
        ]
        return min(open_firsts, default=None)

    def _last_stable_offset(self, marker: MarkerInfo) -> int:
        """Kafka's lastStableOffset(completedTxn): other producers' open txns hold it back."""
        others = [
            entry.current_txn_first_offset
            for pid, entry in self._entries.items()
            if pid != marker.producer_id and entry.current_txn_first_offset != NO_TXN
        ]
        return min(others, default=marker.offset + 1)

    @staticmethod
    def _check_sequence(previous: ProducerSnapshotEntry | None, batch: DataBatchInfo) -> None:
        if previous is None:
            return
        if batch.producer_epoch < previous.producer_epoch:
            raise ProducerStateError(
                f"batch at offset {batch.base_offset}: producer {batch.producer_id} epoch "
                f"{batch.producer_epoch} is fenced by epoch {previous.producer_epoch}"
            )
        if batch.producer_epoch == previous.producer_epoch and (
            batch.base_sequence != previous.last_sequence + 1
        ):
            raise ProducerStateError(
                f"batch at offset {batch.base_offset}: producer {batch.producer_id} sequence "
                f"{batch.base_sequence} does not follow {previous.last_sequence}"
            )
