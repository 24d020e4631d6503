"""A restore of real broker-written segments: Kafka 2.7.1's rolled segments from
``../shared/kafka-samples`` (skipped without it), tiered, their partition directories set
aside, and restored byte for byte.

The only rolled segments among the samples belong to internal topics, which Kafka never
tiers; the test moves them under an ordinary topic's name (the bytes of a segment never name
their topic), with the root checkpoints that say where each partition's log starts and ends."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.restore.test_restore_partition import assert_restored_as_written, finished
from tierflow.config import Settings
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.checkpoint import read_offset_checkpoint, write_offset_checkpoint
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.restore.request import restore_partition
from tierflow.runtime import open_storage, open_store, partition_logs

SAMPLE = "DonaldY__kafka-2.7.1/kafka-logs"
INTERNAL, TOPIC = "__consumer_offsets", "offsets-sample"
CHECKPOINTS = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
)


def rolled_partitions(source: Path) -> list[int]:
    dirs = source.glob(f"{INTERNAL}-*")
    return sorted(int(d.name.rsplit("-", 1)[1]) for d in dirs if len(list(d.glob("*.log"))) > 1)


def as_ordinary_topic(source: Path, log_dir: Path) -> list[int]:
    """The sample's partitions with a rolled segment, renamed, with their checkpoint lines."""
    partitions = rolled_partitions(source)
    for p in partitions:
        shutil.copytree(source / f"{INTERNAL}-{p}", log_dir / f"{TOPIC}-{p}")
    for name in CHECKPOINTS:
        offsets = read_offset_checkpoint(source / name)
        kept = {(TOPIC, p): o for (t, p), o in offsets.items() if t == INTERNAL and p in partitions}
        write_offset_checkpoint(log_dir / name, kept)
    return partitions


def test_real_rolled_segments_restore_byte_for_byte(kafka_samples: Path, tmp_path: Path) -> None:
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    assert len(as_ordinary_topic(kafka_samples / SAMPLE, log_dir)) == 3
    settings = Settings.embedded(tmp_path, log_dirs=(log_dir,))
    store, rsm = open_store(settings), open_storage(settings)
    store.register_topic(
        TOPIC, new_kafka_uuid(), actor="test", now_ms=0, remote_storage_enable=True
    )
    for log_ in partition_logs(settings.log_dirs):
        assert copy_partition(log_, store, rsm, owner="test").copied
        restore_partition(
            store, rsm, topic=TOPIC, partition=log_.partition, log_dir=tmp_path / "restored"
        )
        assert finished(store, log_)
        assert_restored_as_written(store, log_, tmp_path / "restored")
