"""The batches a ``read_committed`` consumer returns, by Kafka's own rule (the consumer's
Fetcher, KIP-98): the aborted transactions of the fetched range are taken in order of their
first offset; a producer is aborting from an aborted transaction's first offset until its ABORT
marker; its transactional batches in between are skipped, and so is every control batch.

The aborted transactions come from the ``.txnindex`` of the segment and of every later one, as
a broker collects them for a fetch: an ABORT marker may lie in a segment after the records it
aborts.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Iterable, Iterator, Sequence

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from tierflow.kafka.txn_index import AbortedTxn

ABORT = 0  # a control record's key: version (int16), then type (int16): 0 ABORT, 1 COMMIT
_CONTROL_KEY = struct.Struct(">hh")


def kafka_python_batches(data: bytes) -> Iterator:
    """Every batch of a segment's bytes, as kafka-python reads it."""
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        yield batch


def aborted_between(
    aborted: Iterable[AbortedTxn], start_offset: int, end_offset: int
) -> list[AbortedTxn]:
    """The aborted transactions a fetch of ``start_offset``..``end_offset`` needs, as a broker
    collects them: those not aborted before the start and begun by the end."""
    return [a for a in aborted if a.last_offset >= start_offset and a.first_offset <= end_offset]


def committed_batches(batches: Iterable, aborted: Sequence[AbortedTxn]) -> Iterator:
    """The data batches a read_committed consumer keeps, in offset order."""
    return (batch for batch, skipped in batch_fates(batches, aborted) if not skipped)


def batch_fates(batches: Iterable, aborted: Sequence[AbortedTxn]) -> Iterator[tuple[object, bool]]:
    """Every batch, with whether a read_committed consumer skips it: the data batches of
    aborted transactions, and every control batch."""
    pending = [(txn.first_offset, txn.producer_id) for txn in aborted]
    heapq.heapify(pending)
    aborting: set[int] = set()
    for batch in batches:
        if batch.magic < 2:  # a legacy message set: no transactions, no control records
            yield batch, False
            continue
        while pending and pending[0][0] <= batch.last_offset:
            aborting.add(heapq.heappop(pending)[1])
        if batch.is_control_batch:
            if is_abort_marker(batch):
                aborting.discard(batch.producer_id)
            yield batch, True
            continue
        yield batch, batch.is_transactional and batch.producer_id in aborting


class OpenTransactions:
    """The transactions still open after the batches seen so far: per producer, the first
    offset of its open transaction. Their records cannot be exported yet, for their marker (and
    so whether they commit) lies beyond the tiered data; the lowest first offset plays the last
    stable offset's part."""

    def __init__(self) -> None:
        self.first_offsets: dict[int, int] = {}

    def tracking(self, batches: Iterable) -> Iterator:
        """The batches, each seen on its way past (its header only: records stay unread)."""
        for batch in batches:
            self.see(batch)
            yield batch

    def see(self, batch: object) -> None:
        if batch.magic < 2 or not batch.is_transactional:
            return
        if batch.is_control_batch:
            self.first_offsets.pop(batch.producer_id, None)
        else:
            self.first_offsets.setdefault(batch.producer_id, batch.base_offset)

    def stable_offset(self, next_offset: int) -> int:
        """The first offset not yet decided: ``next_offset`` when every transaction ended."""
        return min(self.first_offsets.values(), default=next_offset)


def is_abort_marker(batch: DefaultRecordBatch) -> bool:
    """A control batch holds one record, whose key says ABORT or COMMIT."""
    for record in batch:
        _version, kind = _CONTROL_KEY.unpack_from(record.key)
        return kind == ABORT
    return False
