"""LogDir/PartitionLog over a generated broker log directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.kafka.log_builders import v2_batch, write
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    write_offset_checkpoint,
)
from tierflow.kafka.errors import MissingFileError, UnknownPartitionError
from tierflow.kafka.leader_epoch import EpochEntry, write_leader_epoch_checkpoint
from tierflow.kafka.log_dir import LogDir
from tierflow.kafka.partition_metadata import write_partition_metadata


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    orders0 = tmp_path / "orders-0"
    orders0.mkdir()
    write(orders0 / "00000000000000000000.log", v2_batch(0, 5), v2_batch(5, 5, leader_epoch=1))
    write(orders0 / "00000000000000000010.log", v2_batch(10, 3, leader_epoch=1))
    write(orders0 / "00000000000000000003.log.deleted", v2_batch(3, 1))
    write_leader_epoch_checkpoint(orders0 / "leader-epoch-checkpoint", [EpochEntry(1, 5)])
    write_partition_metadata(orders0 / "partition.metadata", "2P63MtzYTASmr9ZbB4Mf_Q")
    for name in ("orders-10", "orders-2", "payments-0"):
        (tmp_path / name).mkdir()
        write(tmp_path / name / "00000000000000000000.log")
    (tmp_path / "orders-1.0a1b2c3d-delete").mkdir()
    (tmp_path / "orders-4.0a1b2c3d-future").mkdir()
    write(tmp_path / "cleaner-offset-checkpoint")
    write_offset_checkpoint(
        tmp_path / REPLICATION_OFFSET_CHECKPOINT, {("orders", 0): 13, ("orders", 2): 0}
    )
    write_offset_checkpoint(tmp_path / LOG_START_OFFSET_CHECKPOINT, {("orders", 0): 7})
    return tmp_path


def test_partitions_are_sorted_and_filtered(log_dir: Path) -> None:
    keys = [p.key for p in LogDir(log_dir).partitions()]
    assert keys == [("orders", 0), ("orders", 2), ("orders", 10), ("payments", 0)]


def test_partition_state(log_dir: Path) -> None:
    orders0 = LogDir(log_dir).partition("orders", 0)
    assert [s.base_offset for s in orders0.segments()] == [0, 10]
    assert orders0.topic_id() == "2P63MtzYTASmr9ZbB4Mf_Q"
    assert orders0.leader_epoch_entries() == [EpochEntry(1, 5)]
    assert orders0.high_watermark() == 13
    assert orders0.log_start_offset() == 7
    assert orders0.log_end_offset() == 13
    assert orders0.producer_snapshot_path(13).name == "00000000000000000013.snapshot"


def test_defaults_without_checkpoints(log_dir: Path) -> None:
    payments = LogDir(log_dir).partition("payments", 0)
    assert payments.topic_id() is None
    assert payments.leader_epoch_entries() == []
    assert payments.high_watermark() is None
    assert payments.log_start_offset() == 0
    assert payments.log_end_offset() == 0


def test_missing_partition_and_dir(log_dir: Path) -> None:
    with pytest.raises(UnknownPartitionError, match="orders-7") as err:
        LogDir(log_dir).partition("orders", 7)
    assert isinstance(err.value, KeyError)
    with pytest.raises(MissingFileError) as missing:
        LogDir(log_dir / "nope")
    assert isinstance(missing.value, FileNotFoundError)


def test_topic_id_round_trips_through_a_partition(log_dir: Path) -> None:
    topic_id = new_kafka_uuid()
    write_partition_metadata(log_dir / "orders-2" / "partition.metadata", topic_id)
    assert LogDir(log_dir).partition("orders", 2).topic_id() == topic_id
