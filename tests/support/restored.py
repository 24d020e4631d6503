"""Checks that a restored partition is what the broker wrote, shared by the restore tests."""

from __future__ import annotations

from pathlib import Path

from kafka.record.memory_records import MemoryRecords

from tests.support.tiered import Tiered
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
)
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    entries_before,
    read_leader_epoch_checkpoint,
)
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.partition_metadata import PARTITION_METADATA, read_partition_metadata
from tierflow.kafka.time_index import TimeIndex
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.restore.plan import find_topic
from tierflow.restore.request import restore_partition


def finished_rows(store: MetadataStore, log_: PartitionLog) -> list:
    topic_id = find_topic(store, log_.topic).topic_id  # live, or deleted and not yet removed
    return store.segments(topic_id, log_.partition, states=[S.COPY_SEGMENT_FINISHED])


def earlier_restore(t: Tiered, target: Path) -> None:
    """What an operator restored into ``target`` before: orders-0 up to the middle of its
    second segment (two segments, the second cut), recorded as a restore of its own."""
    rows = finished_rows(t.store, t.log("orders", 0))
    middle = (rows[1].start_offset + rows[1].end_offset) // 2
    restore_partition(t.store, t.rsm, topic="orders", partition=0, log_dir=target, to_offset=middle)


def restore_events(t: Tiered, log_: PartitionLog) -> int:
    topic_id = find_topic(t.store, log_.topic).topic_id
    return len(t.store.events(topic_id=topic_id, partition=log_.partition, entity="restore"))


def kafka_python_records(data: bytes) -> list[tuple]:
    """Every record as kafka-python reads it: offset, timestamp, key, value, headers."""
    records, found = MemoryRecords(data), []
    while (batch := records.next_batch()) is not None:
        for r in batch:
            headers = tuple(getattr(r, "headers", ()) or ())
            found.append((r.offset, r.timestamp, r.key, r.value, headers))
    assert found or not data, "kafka-python read no record from a non-empty log"
    return found


def assert_restored_as_written(store: MetadataStore, log_: PartitionLog, target: Path) -> None:
    restored = target / log_.path.name
    rows = finished_rows(store, log_)
    for row in rows:
        segment = next(s for s in log_.segments() if s.base_offset == row.start_offset)
        prefix = segment.log_path.stem
        data = (restored / f"{prefix}.log").read_bytes()
        assert data == segment.log_path.read_bytes()
        assert kafka_python_records(data) == kafka_python_records(segment.log_path.read_bytes())
        for suffix, kind in ((".index", OffsetIndex), (".timeindex", TimeIndex)):
            original, _ = kind.valid_file_bytes(segment.log_path.with_suffix(suffix))
            assert (restored / f"{prefix}{suffix}").read_bytes() == original
        snapshot = log_.producer_snapshot_path(row.end_offset + 1)
        assert (restored / snapshot.name).read_bytes() == snapshot.read_bytes()
        txn = segment.log_path.with_suffix(".txnindex")
        if txn.exists() and txn.stat().st_size:
            assert (restored / txn.name).read_bytes() == txn.read_bytes()
    topic_id = find_topic(store, log_.topic).topic_id
    assert read_partition_metadata(restored / PARTITION_METADATA) == topic_id
    if (log_.path / PARTITION_METADATA).exists():  # Kafka 2.8 and later
        assert read_partition_metadata(log_.path / PARTITION_METADATA) == topic_id
    # The broker's own leader-epoch cache, cut at the end of the restored offsets.
    epochs = read_leader_epoch_checkpoint(restored / LEADER_EPOCH_CHECKPOINT)
    original = read_leader_epoch_checkpoint(log_.path / LEADER_EPOCH_CHECKPOINT)
    assert epochs == entries_before(original, rows[-1].end_offset + 1)
    key = (log_.topic, log_.partition)
    assert read_offset_checkpoint(target / LOG_START_OFFSET_CHECKPOINT)[key] == rows[0].start_offset
    recovery = read_offset_checkpoint(target / RECOVERY_POINT_OFFSET_CHECKPOINT)[key]
    assert recovery == rows[-1].end_offset + 1
