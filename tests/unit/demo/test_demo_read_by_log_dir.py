"""tierflow.kafka's readers must see in the generated dir exactly what the generator wrote."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.demo.broker import GeneratedLogDir, generate_log_dir
from tierflow.kafka.log_dir import LogDir
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.producer_snapshot import read_producer_snapshot
from tierflow.kafka.time_index import TimeIndex
from tierflow.kafka.txn_index import read_txn_index


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GeneratedLogDir:
    path: Path = tmp_path_factory.mktemp("read") / "kafka-logs"
    return generate_log_dir(path, seed=11, now_ms=1_760_000_000_000)


def test_log_dir_sees_every_partition(generated: GeneratedLogDir) -> None:
    log_dir = LogDir(generated.path)
    keys = [(p.topic, p.partition) for p in log_dir.partitions()]
    assert keys == [(p.topic, p.partition) for p in generated.partitions]


def test_partition_metadata_and_offsets_agree(generated: GeneratedLogDir) -> None:
    log_dir = LogDir(generated.path)
    for expected in generated.partitions:
        partition = log_dir.partition(expected.topic, expected.partition)
        assert partition.topic_id() == expected.topic_id
        segments = partition.segments()
        assert tuple(s.base_offset for s in segments) == expected.segment_base_offsets
        assert partition.log_start_offset() == expected.log_start_offset
        assert partition.log_end_offset() == expected.log_end_offset
        assert partition.high_watermark() == expected.high_watermark
        assert partition.recovery_point() == expected.active_base_offset
        assert partition.snapshot_offsets() == list(expected.segment_base_offsets[1:])


def test_segments_epochs_and_indexes_read_cleanly(generated: GeneratedLogDir) -> None:
    log_dir = LogDir(generated.path)
    for expected in generated.partitions:
        partition = log_dir.partition(expected.topic, expected.partition)
        from_batches = []
        for segment in partition.segments():
            batches = list(segment.batches())  # CRCs validated by the reader
            assert batches[0].base_offset == segment.base_offset
            for entry in segment.leader_epochs():
                if not from_batches or entry.epoch > from_batches[-1].epoch:
                    from_batches.append(entry)
            size = segment.size_in_bytes()
            offsets = OffsetIndex.read(segment.index_path, segment.base_offset, log_size=size)
            starts = {b.position: b for b in batches}
            for entry in offsets.entries:
                assert starts[entry.position].last_offset == entry.offset
            times = TimeIndex.read(segment.time_index_path, segment.base_offset)
            assert times.entries[-1].timestamp <= segment.largest_timestamp()
        assert partition.leader_epoch_entries() == from_batches == list(expected.leader_epochs)


def test_txn_indexes_and_snapshots_read_cleanly(generated: GeneratedLogDir) -> None:
    log_dir = LogDir(generated.path)
    for expected in generated.partitions:
        partition = log_dir.partition(expected.topic, expected.partition)
        aborted = [
            txn
            for segment in partition.segments()
            if segment.has_txn_index()
            for txn in read_txn_index(segment.txn_index_path)
        ]
        assert aborted == list(expected.aborted_txns)
        for offset in partition.snapshot_offsets():
            entries = read_producer_snapshot(partition.producer_snapshot_path(offset))
            assert all(e.last_offset < offset for e in entries)
            assert all(-1 <= e.current_txn_first_offset < offset for e in entries)
