"""A restore of real broker-written segments from ``../shared/kafka-samples`` (skipped without
it): every sample partition with a rolled segment, on both storage layouts, is tiered, its
partition directory deleted from the log dir, and restored there byte for byte.

The samples' only rolled segments belong to internal topics, which Kafka never tiers: Kafka
2.7.1's ``__consumer_offsets`` and Kafka 4.0's KRaft metadata log. The test moves them under
an ordinary topic's name (the bytes of a segment never name their topic), with the root
checkpoints that say where each partition's log starts and ends; the metadata log has no line
there, so its high watermark is its log end offset, as on a quorum's leader."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.restored import assert_restored_as_written, finished_rows
from tests.support.tiered import LAYOUTS
from tierflow.config import Settings
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.checkpoint import (
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tierflow.kafka.log_dir import LogDir
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.restore.request import restore_partition
from tierflow.runtime import open_storage, open_store, partition_logs
from tierflow.transform.keyring import KeyRing

SAMPLES = {  # sample log dir: the internal topic whose partitions rolled a segment
    "DonaldY__kafka-2.7.1/kafka-logs": "__consumer_offsets",
    "thanhnhadev__Data_Enginer/data/logs": "__cluster_metadata",
}
TOPIC = "restored-sample"
CHECKPOINTS = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
)


def rolled_partitions(source: Path, internal: str) -> list[int]:
    dirs = source.glob(f"{internal}-*")
    return sorted(int(d.name.rsplit("-", 1)[1]) for d in dirs if len(list(d.glob("*.log"))) > 1)


def as_ordinary_topic(source: Path, internal: str, log_dir: Path) -> list[int]:
    """The sample's partitions with a rolled segment, renamed, with their checkpoint lines."""
    partitions = rolled_partitions(source, internal)
    for p in partitions:
        shutil.copytree(source / f"{internal}-{p}", log_dir / f"{TOPIC}-{p}")
        for path in (log_dir / f"{TOPIC}-{p}").iterdir():
            path.chmod(0o644)
    for name in CHECKPOINTS:
        offsets = read_offset_checkpoint(source / name)
        kept = {(TOPIC, p): o for (t, p), o in offsets.items() if t == internal and p in partitions}
        write_offset_checkpoint(log_dir / name, kept)
    high_watermarks = read_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT)
    for log_ in LogDir(log_dir).partitions():
        high_watermarks.setdefault((TOPIC, log_.partition), log_.log_end_offset())
    write_offset_checkpoint(log_dir / REPLICATION_OFFSET_CHECKPOINT, high_watermarks)
    return partitions


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_real_rolled_segments_restore_byte_for_byte(
    kafka_samples: Path, tmp_path: Path, sample: str, layout: str
) -> None:
    log_dir, aside = tmp_path / "logs", tmp_path / "deleted"
    log_dir.mkdir()
    assert as_ordinary_topic(kafka_samples / sample, SAMPLES[sample], log_dir)
    overrides: dict = dict(LAYOUTS[layout])
    if layout == "chunked-encrypted":
        overrides["keyring"] = KeyRing.generate(tmp_path / "keys", "samples-1").path
    settings = Settings.embedded(tmp_path, log_dirs=(log_dir,), **overrides)
    store, rsm = open_store(settings), open_storage(settings)
    topic_id = LogDir(log_dir).partitions()[0].topic_id() or new_kafka_uuid()  # Kafka 2.8+
    store.register_topic(TOPIC, topic_id, actor="test", now_ms=0, remote_storage_enable=True)
    for log_ in partition_logs(settings.log_dirs):
        assert copy_partition(log_, store, rsm, owner="test").copied
        assert finished_rows(store, log_)
        aside.mkdir(exist_ok=True)
        shutil.move(log_.path, aside / log_.path.name)  # the local partition directory is lost
        restore_partition(store, rsm, topic=TOPIC, partition=log_.partition, log_dir=log_dir)
    for original in LogDir(aside).partitions():
        assert_restored_as_written(store, original, log_dir)
