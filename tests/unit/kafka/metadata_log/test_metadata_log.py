"""The KRaft metadata log replayed offline: the real Kafka 4.0 sample and generated logs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

from tierflow.kafka.batch_builder import Record, build_batch
from tierflow.kafka.errors import CorruptMetadataRecordError, KafkaFormatError
from tierflow.kafka.leader_epoch import read_leader_epoch_checkpoint
from tierflow.kafka.metadata_log import (
    METADATA_PARTITION_DIR,
    PartitionImage,
    TopicImage,
    find_metadata_image,
    read_metadata_log,
)
from tierflow.kafka.metadata_log import records as r
from tierflow.kafka.metadata_log.writer import (
    MetadataLogWriter,
    metadata_version_record,
    partition_change,
    partition_record,
    register_broker_record,
    remove_topic_record,
    topic_config_record,
    topic_record,
)
from tierflow.kafka.partition_metadata import read_partition_metadata

SAMPLE = "thanhnhadev__Data_Enginer/data/logs"
# Reference §8: topic -> (topic id, partitions, final leader epoch = partition epoch).
SAMPLE_TOPICS = {
    "lab.orders": ("Cir6k_qzQUmcJTezNUDiug", 3, 8),
    "demo.orders": ("DO-MxASdQvK1gWdIMjBZbg", 3, 8),
    "demo-topic": ("k4aNnUMjRpGjG__v5ciNsw", 3, 4),
    "demos-topic": ("o2YW3a3ITuGD_YpaS1WnZg", 1, 0),
}
ORDERS, PAYMENTS = "AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAw"


@pytest.fixture
def sample_logs(samples_root: Path) -> Path:
    return samples_root / SAMPLE


def test_sample_matches_the_worked_example(sample_logs: Path) -> None:
    image = read_metadata_log(sample_logs / METADATA_PARTITION_DIR)
    assert image.topics == {
        name: TopicImage(name, topic_id) for name, (topic_id, _, _) in SAMPLE_TOPICS.items()
    }
    expected = {
        (name, p): PartitionImage(name, p, 1, epoch, epoch, (1,), (1,))
        for name, (_, count, epoch) in SAMPLE_TOPICS.items()
        for p in range(count)
    }
    assert image.partitions == expected
    assert image.configs == {}  # the sample has no ConfigRecord
    assert image.end_offset == 31014
    broker = image.brokers[1]
    assert (broker.broker_epoch, broker.fenced) == (26056, False)  # the last session, still up


def test_sample_agrees_with_the_partition_directories(sample_logs: Path) -> None:
    """Each data partition's own files: its topic id and its last leader epoch."""
    image = read_metadata_log(sample_logs / METADATA_PARTITION_DIR)
    for (topic, index), partition in image.partitions.items():
        directory = sample_logs / f"{topic}-{index}"
        assert read_partition_metadata(directory / "partition.metadata") == (
            image.topics[topic].topic_id
        )
        epochs = read_leader_epoch_checkpoint(directory / "leader-epoch-checkpoint")
        assert epochs[-1].epoch == partition.leader_epoch


def test_sample_snapshot_then_log_equals_the_whole_log(sample_logs: Path, tmp_path: Path) -> None:
    with_snapshot = read_metadata_log(sample_logs / METADATA_PARTITION_DIR)
    copy = tmp_path / METADATA_PARTITION_DIR
    shutil.copytree(sample_logs / METADATA_PARTITION_DIR, copy)
    snapshot = copy / "00000000000000007201-0000000001.checkpoint"
    snapshot.unlink()
    assert read_metadata_log(copy) == with_snapshot


def test_sample_log_missing_after_the_snapshot_is_refused(
    sample_logs: Path, tmp_path: Path
) -> None:
    """Snapshot ends at 7201 but the remaining segment starts at 18881: a gap, not a state."""
    copy = tmp_path / METADATA_PARTITION_DIR
    shutil.copytree(sample_logs / METADATA_PARTITION_DIR, copy)
    (copy / "00000000000000000000.log").unlink()
    with pytest.raises(CorruptMetadataRecordError, match=r"offsets 7201\.\.18880 are missing"):
        read_metadata_log(copy)


def test_find_metadata_image(sample_logs: Path, tmp_path: Path) -> None:
    assert find_metadata_image([tmp_path]) is None
    image = find_metadata_image([tmp_path, sample_logs])
    assert image is not None and set(image.topics) == set(SAMPLE_TOPICS)


def _cluster(path: Path) -> MetadataLogWriter:
    """Three brokers, topic orders (2 partitions, RF 3) and payments (1 partition)."""
    writer = MetadataLogWriter(path)
    writer.transaction(
        [metadata_version_record(), *(register_broker_record(b, b) for b in (1, 2, 3))],
        name="Bootstrap records",
    )
    writer.append(
        topic_record("orders", ORDERS),
        topic_config_record("orders", "retention.ms", "3600000"),
        partition_record(ORDERS, 0, [1, 2, 3]),
        partition_record(ORDERS, 1, [2, 3, 1]),
    )
    writer.append(topic_record("payments", PAYMENTS), partition_record(PAYMENTS, 0, [3, 1, 2]))
    return writer


def test_leader_changes_bump_the_leader_epoch(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    writer.append(partition_change(ORDERS, 0, leader=r.NO_LEADER))  # leader lost
    writer.append(partition_change(ORDERS, 0, leader=2))
    # Same leader again: Kafka still bumps the epoch (forced on reassignment).
    writer.append(partition_change(ORDERS, 0, leader=2))
    image = read_metadata_log(tmp_path)
    assert image.partitions[("orders", 0)] == PartitionImage(
        "orders", 0, 2, 3, 3, (1, 2, 3), (1, 2, 3)
    )
    assert image.partitions[("orders", 1)].leader_epoch == 0


def test_isr_shrink_bumps_only_the_partition_epoch(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    writer.append(partition_change(ORDERS, 1, isr=[2, 3]))
    writer.append(partition_change(ORDERS, 1, isr=[2], replicas=[2, 3, 4]))
    p = read_metadata_log(tmp_path).partitions[("orders", 1)]
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (2, 0, 2)
    assert (p.replicas, p.isr) == ((2, 3, 4), (2,))


def test_leader_minus_one_keeps_the_isr(tmp_path: Path) -> None:
    """Kafka keeps the last ISR member when the only live replica goes away (reference §7)."""
    writer = _cluster(tmp_path)
    writer.append(partition_change(PAYMENTS, 0, isr=[3]))
    writer.append(partition_change(PAYMENTS, 0, leader=r.NO_LEADER))
    p = read_metadata_log(tmp_path).partitions[("payments", 0)]
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.isr) == (-1, 1, 2, (3,))


def test_configs_set_overwrite_and_delete(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    writer.append(
        topic_config_record("orders", "remote.storage.enable", "true"),
        topic_config_record("orders", "retention.ms", "7200000"),
        topic_config_record("payments", "cleanup.policy", "compact"),
        r.ConfigRecord(
            version=0, resource_type=r.RESOURCE_BROKER, resource_name="", name="x", value="1"
        ),
    )
    writer.append(topic_config_record("payments", "cleanup.policy", None))
    image = read_metadata_log(tmp_path)
    assert image.configs == {"orders": {"retention.ms": "7200000", "remote.storage.enable": "true"}}


def test_topic_removal_and_reuse_of_the_name(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    writer.append(topic_config_record("payments", "retention.ms", "1"))
    writer.append(remove_topic_record(PAYMENTS))
    image = read_metadata_log(tmp_path)
    assert set(image.topics) == {"orders"}
    assert ("payments", 0) not in image.partitions and "payments" not in image.configs
    new_id = "AAAAAAAAAAAAAAAAAAAABA"
    writer.append(topic_record("payments", new_id), partition_record(new_id, 0, [1]))
    image = read_metadata_log(tmp_path)
    assert image.topics["payments"].topic_id == new_id
    assert image.partitions[("payments", 0)].replicas == (1,)


def test_rolled_segments_and_raft_epochs(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    for leader in (2, 3, 1):
        writer.roll()
        writer.new_leader(1, epoch=writer.raft_epoch + 1)
        writer.append(r.NO_OP_RECORD, partition_change(ORDERS, 0, leader=leader))
    assert len(list(tmp_path.glob("*.log"))) == 4
    p = read_metadata_log(tmp_path).partitions[("orders", 0)]
    assert (p.leader, p.leader_epoch) == (1, 3)


def test_snapshot_then_later_log(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    writer.append(partition_change(ORDERS, 0, leader=3, isr=[3, 1]))
    writer.roll()
    full = read_metadata_log(tmp_path)
    writer.snapshot(full)
    writer.append(partition_change(ORDERS, 0, leader=1), r.NO_OP_RECORD)
    expected = read_metadata_log(tmp_path)
    # Kafka deletes segments wholly below the snapshot: the state must come from it.
    (tmp_path / "00000000000000000000.log").unlink()
    image = read_metadata_log(tmp_path)
    assert image == expected
    assert image.partitions[("orders", 0)] == PartitionImage(
        "orders", 0, 1, 2, 2, (1, 2, 3), (3, 1)
    )


def test_transactions_apply_at_end_and_not_on_abort(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    writer.transaction([topic_record("gone", "AAAAAAAAAAAAAAAAAAAABQ")], name="t1", abort=True)
    writer.transaction([topic_config_record("orders", "a", "1")], name="t2")
    writer.append(r.BeginTransactionRecord(version=0, name="open at the tail"))
    writer.append(topic_config_record("orders", "b", "2"))
    image = read_metadata_log(tmp_path)
    assert "gone" not in image.topics
    assert image.configs["orders"] == {"retention.ms": "3600000", "a": "1"}


def _raw_value(api_key: int, version: int, body: bytes) -> bytes:
    frame = b"".join(UnsignedVarInt32.encode(n) for n in (1, api_key, version))
    return frame + body


def _append_raw(writer: MetadataLogWriter, value: bytes) -> tuple[int, int]:
    """A batch with a valid CRC around ``value``; returns (byte position, offset)."""
    position = writer._segment.stat().st_size
    batch = build_batch(
        [Record(None, value, writer.timestamp)],
        base_offset=writer.next_offset,
        leader_epoch=writer.raft_epoch,
    )
    return position, writer._write(batch, 1)


def test_unknown_record_types_are_skipped(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    _append_raw(writer, _raw_value(15, 0, b"\x00" * 13))  # ProducerIdsRecord: not state
    _append_raw(writer, _raw_value(99, 0, b"whatever"))
    assert set(read_metadata_log(tmp_path).topics) == {"orders", "payments"}


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (_raw_value(2, 0, b"\x07orders"), "cannot decode TopicRecord v0"),
        (
            _raw_value(9, 0, b"\x00" * 17 + b"\x00extra"),
            "6 trailing bytes after RemoveTopicRecord v0",
        ),
        (_raw_value(3, 7, b"\x00"), "unsupported version 7 of apiKey 3"),
        (b"\x00\x02\x00", "unsupported metadata frame version 0"),
    ],
    ids=["truncated", "trailing-bytes", "newer-partition-record", "frame-0"],
)
def test_damaged_record_names_file_and_offset(tmp_path: Path, value: bytes, reason: str) -> None:
    writer = _cluster(tmp_path)
    position, offset = _append_raw(writer, value)
    with pytest.raises(CorruptMetadataRecordError) as err:
        read_metadata_log(tmp_path)
    assert isinstance(err.value, KafkaFormatError)
    assert err.value.path == str(tmp_path / "00000000000000000000.log")
    assert err.value.position == position
    assert f"record at offset {offset}: {reason}" in str(err.value)


def test_partition_of_an_unknown_topic_is_refused(tmp_path: Path) -> None:
    writer = _cluster(tmp_path)
    writer.append(partition_record("AAAAAAAAAAAAAAAAAAAAfw", 0, [1]))
    with pytest.raises(CorruptMetadataRecordError, match="unknown topic id AAAAAAAAAAAAAAAAAAAAfw"):
        read_metadata_log(tmp_path)


def test_find_metadata_image_reads_the_furthest_replica(tmp_path: Path) -> None:
    follower = _cluster(tmp_path / "broker-2" / METADATA_PARTITION_DIR)
    leader = _cluster(tmp_path / "broker-1" / METADATA_PARTITION_DIR)
    leader.append(remove_topic_record(PAYMENTS))
    assert follower.next_offset < leader.next_offset
    image = find_metadata_image([tmp_path / "broker-2", tmp_path / "broker-1"])
    assert image is not None and set(image.topics) == {"orders"}
