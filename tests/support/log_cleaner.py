"""Kafka's log cleaner, reduced to what the compacted-topic tests need.

A pass over one partition (``LogCleaner``/``Cleaner.doClean``, simplified): every segment
wholly below ``first_uncleanable`` is rewritten keeping, for each key, only its record with the
highest offset below that offset; each batch keeps its base offset and producer fields and its
records keep their offsets, timestamps and headers; a batch left empty goes. Transaction
markers and batches without records to judge (control batches) are kept as they are;
tombstones are kept (no ``delete.retention.ms`` expiry here). ``merge`` groups consecutive
segments into one file under the first one's name, as the cleaner's size-based grouping does,
and each group is swapped in through ``.cleaned`` and ``.swap`` files, as the broker does. The
cleaner's checkpoint then holds ``first_uncleanable`` for the partition.

The rewritten indexes follow the broker's append path: an offset index entry (the batch's last
offset, its position) once more than ``index_interval_bytes`` were written since the last one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch

from tierflow.kafka.batch_builder import ProducerFields, Record, build_batch
from tierflow.kafka.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tierflow.kafka.naming import LOG_SUFFIX, parse_partition_dir
from tierflow.kafka.offset_index import OffsetPosition, write_offset_index
from tierflow.kafka.record_batch import iter_batches
from tierflow.kafka.segment import LogSegment
from tierflow.kafka.time_index import TimeIndexBuilder, write_time_index


def clean_partition(
    partition: Path,
    *,
    first_uncleanable: int,
    merge: Sequence[Sequence[int]] = (),
    index_interval_bytes: int = 4096,
) -> None:
    segments = sorted(
        (LogSegment.from_log_path(p) for p in partition.glob(f"*{LOG_SUFFIX}")),
        key=lambda s: s.base_offset,
    )
    cleanable = [s for s, nxt in pairwise(segments) if nxt.base_offset <= first_uncleanable]
    latest: dict[bytes, int] = {}
    for segment in cleanable:
        for _, batch in _raw_batches(segment):
            for record in [] if batch.is_control_batch else batch:
                latest[record.key] = record.offset
    for group in _groups(cleanable, merge):
        _swap_in(group, latest, index_interval_bytes)
    mark_cleaned(partition, first_uncleanable)


def _raw_batches(segment: LogSegment) -> Iterator[tuple[bytes, DefaultRecordBatch]]:
    data = segment.log_path.read_bytes()
    for header in iter_batches(segment.log_path):
        raw = data[header.position : header.position + header.size_in_bytes]
        yield raw, DefaultRecordBatch(raw)


def _groups(cleanable: list[LogSegment], merge: Sequence[Sequence[int]]) -> list[list[LogSegment]]:
    by_base = {s.base_offset: s for s in cleanable}
    merged = {base for group in merge for base in group}
    groups = [[by_base[base] for base in group] for group in merge]
    groups += [[s] for s in cleanable if s.base_offset not in merged]
    return sorted(groups, key=lambda g: g[0].base_offset)


def _swap_in(group: list[LogSegment], latest: dict[bytes, int], interval: int) -> None:
    """The group's cleaned batches as one segment under the first one's name."""
    data = b"".join(_cleaned(raw, b, latest) for s in group for raw, b in _raw_batches(s))
    target = group[0]
    cleaned = target.log_path.with_name(target.log_path.name + ".cleaned")
    cleaned.write_bytes(data)
    swap = cleaned.with_suffix(".swap")
    cleaned.rename(swap)
    for segment in group:
        for path in (segment.log_path, segment.index_path, segment.time_index_path):
            path.unlink()
        segment.txn_index_path.unlink(missing_ok=True)
    swap.rename(target.log_path)
    _write_indexes(target, interval)


def _cleaned(raw: bytes, batch: DefaultRecordBatch, latest: dict[bytes, int]) -> bytes:
    if batch.is_control_batch:
        return raw
    kept = [r for r in batch if latest.get(r.key) == r.offset]
    if not kept:
        return b""
    return build_batch(
        [Record(r.key, r.value, r.timestamp, tuple(r.headers)) for r in kept],
        base_offset=batch.base_offset,
        leader_epoch=batch.leader_epoch,
        producer=ProducerFields(
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            transactional=batch.is_transactional,
        ),
        offset_deltas=[r.offset - batch.base_offset for r in kept],
    )


def _write_indexes(segment: LogSegment, interval: int) -> None:
    entries, times, since = [], TimeIndexBuilder(), 0
    for header in iter_batches(segment.log_path):
        times.observe(header.max_timestamp, header.last_offset)
        if since > interval:
            entries.append(OffsetPosition(header.last_offset, header.position))
            times.maybe_append()
            since = 0
        since += header.size_in_bytes
    times.maybe_append()
    write_offset_index(segment.index_path, segment.base_offset, entries)
    write_time_index(segment.time_index_path, segment.base_offset, times.entries)


def mark_cleaned(partition: Path, first_uncleanable: int) -> None:
    """The cleaner's checkpoint, as a pass that found nothing to remove leaves it."""
    path = partition.parent / CLEANER_OFFSET_CHECKPOINT
    offsets = read_offset_checkpoint(path) if path.exists() else {}
    topic, number = parse_partition_dir(partition.name)
    write_offset_checkpoint(path, {**offsets, (topic, number): first_uncleanable})
