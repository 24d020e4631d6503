"""Leadership moves between two copy runs: the new leader's replica is read from the highest
remote offset on, as Kafka's RLM does after a failover: no gap, no duplicate.

The runs go through the staged pipeline's own steps (plan, prepare per shard, one batch,
finalize per shard, summarize), as the segment_copy DAG runs them.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from tierflow.cluster.leaders import leader_logs
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.ids import to_kafka_uuid
from tierflow.kafka.checkpoint import REPLICATION_OFFSET_CHECKPOINT, write_offset_checkpoint
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from tierflow.kafka.log_dir import LogDir
from tierflow.kafka.partition_metadata import PARTITION_METADATA, partition_metadata_bytes
from tierflow.kafka.records import CODEC_NONE
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_store
from tierflow.tasks import staged
from tierflow.tasks.segment_copy import COPY

TOPIC = "orders"
TOPIC_ID = to_kafka_uuid(uuid.UUID(int=41))


def copy_run(settings: Settings, run_key: str) -> dict:
    op = COPY
    shards = staged.plan_shards(op, {}, settings)
    prepares = [
        staged.prepare_shard(op, s, params={}, run_key=run_key, settings=settings) for s in shards
    ]
    batch = staged.plan_batch(op, prepares, run_key=run_key, settings=settings)
    op.run_in_worker(batch, settings)
    finalizes = [staged.finalize_shard(op, p, batch, settings) for p in prepares]
    return staged.summarize(op, shards, prepares, finalizes)


def replica(directory: Path, template: Path, *, upto: int, epochs: list[EpochEntry]) -> None:
    """A replica of the template partition holding its files below offset ``upto``."""
    directory.mkdir(parents=True)
    for path in template.iterdir():
        if path.name[:20].isdigit() and int(path.name[:20]) < upto:
            os.link(path, directory / path.name)
    (directory / PARTITION_METADATA).write_bytes(partition_metadata_bytes(TOPIC_ID))
    write_leader_epoch_checkpoint(directory / LEADER_EPOCH_CHECKPOINT, epochs)


def broker_dir(base: Path, broker: int, *, high_watermark: int) -> Path:
    path = base / f"broker-{broker}"
    write_offset_checkpoint(path / REPLICATION_OFFSET_CHECKPOINT, {(TOPIC, 0): high_watermark})
    return path


def test_copy_continues_on_the_new_leader_without_a_gap_or_a_duplicate(tmp_path: Path) -> None:
    spec = TopicSpec(name="template", partitions=1, segments=4, codecs=(CODEC_NONE,))
    generate_log_dir(tmp_path / "t", topics=(spec,), seed=9, now_ms=1_790_000_000_000)
    template_log = LogDir(tmp_path / "t").partition("template", 0)
    bases = [s.base_offset for s in template_log.segments()]  # s0 .. s3 rolled, s4 active
    epochs = read_leader_epoch_checkpoint(template_log.path / LEADER_EPOCH_CHECKPOINT)
    newest = epochs[-1].epoch

    # Broker 1 leads with s0..s2 (its active segment is s2); broker 2 follows with s0 only.
    replica(
        tmp_path / "broker-1" / f"{TOPIC}-0",
        template_log.path,
        upto=bases[3],
        epochs=[
            *[e for e in epochs if e.start_offset < bases[3]],
            EpochEntry(newest + 1, bases[3]),
        ],
    )
    replica(
        tmp_path / "broker-2" / f"{TOPIC}-0",
        template_log.path,
        upto=bases[1],
        epochs=[e for e in epochs if e.start_offset < bases[1]],
    )
    broker_dir(tmp_path, 1, high_watermark=bases[2])
    broker_dir(tmp_path, 2, high_watermark=bases[1])
    env = {
        "TIERFLOW_DATA_DIR": str(tmp_path / "data"),
        "TIERFLOW_BROKERS": f"1={tmp_path / 'broker-1'},2={tmp_path / 'broker-2'}",
    }
    settings = Settings.from_env(env)
    store = open_store(settings)
    store.register_topic(TOPIC, TOPIC_ID, actor="test", now_ms=0, remote_storage_enable=True)
    assert [(x.broker, x.log.topic) for x in leader_logs(settings)] == [(1, TOPIC)]

    first = copy_run(settings, "run-1")
    assert first["segments"] == 2  # s0, s1: s2 is broker 1's active segment

    # Broker 1 fails; broker 2 caught up (the whole template log) and leads in a new epoch.
    os.rename(tmp_path / "broker-1" / f"{TOPIC}-0", tmp_path / "gone")
    (tmp_path / "broker-2" / f"{TOPIC}-0").rename(tmp_path / "old-follower")
    replica(
        tmp_path / "broker-2" / f"{TOPIC}-0",
        template_log.path,
        upto=bases[-1] + 10**9,
        epochs=[*epochs, EpochEntry(newest + 2, template_log.log_end_offset())],
    )
    broker_dir(tmp_path, 2, high_watermark=template_log.high_watermark() or 0)
    assert [(x.broker, x.log.topic) for x in leader_logs(settings)] == [(2, TOPIC)]

    second = copy_run(settings, "run-2")
    assert second["segments"] == 2  # s2 and s3, from the new leader
    rows = store.segments(TOPIC_ID, 0, states=[S.COPY_SEGMENT_FINISHED])
    assert [(r.start_offset, r.end_offset) for r in rows] == [
        (bases[i], bases[i + 1] - 1) for i in range(4)
    ], "contiguous, each offset range once"
    assert len(store.segments(TOPIC_ID, 0)) == 4, "nothing started twice"
