"""Pass two of a compaction: a group of source segments written as one compacted segment.

Kafka's cleaner (``LogCleaner.cleanInto``, ``MemoryRecords.filterTo``) copies each batch whose
records all stay byte for byte, drops a batch none of whose records stays, and otherwise
writes the staying records into a new batch that keeps the original's base offset, producer
id, epoch, base sequence, transactional flag, partition leader epoch, codec and timestamp type,
each record with its own offset, timestamp, key, value and headers. COMMIT markers stay; an
ABORT marker goes with its transaction's records (Kafka drops it after ``delete.retention.ms``:
with the records gone at once, nothing is left for a consumer to skip).

The new segment has the group's first base offset and ends at the group's last offset, so the
range stays tiled exactly and the producer snapshot and leader-epoch checkpoint of the group's
last segment are still the state at its end: they are carried over as they are. Its ``.index``
and ``.timeindex`` are built as the batches stream into the upload; aborted transactions are
gone, so there is no ``.txnindex``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from kafka.record.default_records import DefaultRecordBatch

from tierflow.kafka.batch_builder import ProducerFields, Record, build_batch
from tierflow.kafka.index_builder import SegmentIndexBuilder
from tierflow.kafka.read_committed import aborted_between, is_abort_marker
from tierflow.kafka.record_batch import iter_batches_in_buffer
from tierflow.kafka.txn_index import AbortedTxn
from tierflow.lifecycle.compaction.offset_map import KeptOffsets, fated_frames
from tierflow.rsm import (
    IndexType,
    LogSegmentStream,
    RemoteSegment,
    RemoteStorageManager,
    SegmentFiles,
)

LOG_APPEND_TIME = 1


class CompactionError(ValueError):
    """A source segment the compaction cannot rewrite (the message names it)."""


def compacted_batches(
    chunks: Iterable[bytes], aborted: Sequence[AbortedTxn], kept: KeptOffsets, source: str
) -> Iterator[bytes]:
    """The batches of one source ``.log`` that stay, whole or rebuilt, in offset order."""
    for raw, batch, skipped in fated_frames(chunks, aborted, source):
        if batch.magic >= 2 and batch.is_control_batch:
            if not is_abort_marker(DefaultRecordBatch(raw)):  # the fate read it once
                yield raw
            continue
        if skipped:
            continue
        count = kept.count_between(batch.base_offset, batch.last_offset)
        if count == 0:
            continue  # nothing stays: no need to decode it
        if batch.magic >= 2 and count == batch.records_count:
            yield raw  # every record stays: byte for byte
            continue
        records = list(batch)
        staying = [r for r in records if r.offset in kept]
        if len(staying) == len(records):
            yield raw
        elif staying:
            yield rebatch(batch, staying, source)


def rebatch(batch: object, records: Sequence[object], source: str) -> bytes:
    """The staying records of a v2 batch as a batch of their own, with its producer fields."""
    if batch.magic < 2:
        raise CompactionError(
            f"{source}: the message format v{batch.magic} batch at offset {records[0].offset} "
            "holds records to keep and to drop; only v2 batches are rewritten"
        )
    base = batch.base_offset
    return build_batch(
        [Record(r.key, r.value, r.timestamp, tuple(r.headers)) for r in records],
        base_offset=base,
        leader_epoch=batch.leader_epoch,
        compression=batch.compression_type,
        producer=ProducerFields(
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            transactional=batch.is_transactional,
        ),
        log_append_time=batch.max_timestamp if batch.timestamp_type == LOG_APPEND_TIME else None,
        offset_deltas=[r.offset - base for r in records],
        require_codec=False,
    )


def group_stream(
    rsm: RemoteStorageManager,
    target: RemoteSegment,
    sources: Sequence[RemoteSegment],
    aborted: Sequence[AbortedTxn],
    kept: KeptOffsets,
    segment_bytes: int,
) -> tuple[LogSegmentStream, SegmentIndexBuilder]:
    """The compacted segment as its upload reads it, and the builder of its indexes (which
    knows its size and largest timestamp once the upload has read it all)."""
    indexes = SegmentIndexBuilder(target.start_offset)

    def chunks() -> Iterator[bytes]:
        for ref in sources:
            source = ref.describe()
            mine = aborted_between(aborted, ref.start_offset, ref.end_offset)
            for raw in compacted_batches(rsm.iter_log_segment(ref), mine, kept, source):
                header = next(iter_batches_in_buffer(raw, source=source, validate_crc=False))
                indexes.append(header.last_offset, header.max_timestamp, len(raw))
                yield raw

    def files() -> SegmentFiles:
        if indexes.size_in_bytes > segment_bytes:
            raise CompactionError(
                f"{target.describe()}: compacted to {indexes.size_in_bytes} bytes, more than "
                f"segment.bytes={segment_bytes}"
            )
        offset_index, time_index = indexes.roll()
        last = sources[-1]  # its state at the end is the new segment's: the same offset
        return SegmentFiles(
            offset_index=offset_index,
            time_index=time_index,
            transaction_index=None,
            producer_snapshot_index=rsm.fetch_index(last, IndexType.PRODUCER_SNAPSHOT),
            leader_epoch_index=rsm.fetch_index(last, IndexType.LEADER_EPOCH),
        )

    return LogSegmentStream(chunks(), files), indexes
