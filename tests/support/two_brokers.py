"""Two brokers' log dirs holding a thousand partitions with replication factor 2, in seconds.

One partition is generated for real (``tierflow.demo.broker``); every replica links its files.
Partition ``p`` is led by broker ``1 + p % 2``, which, as Kafka's ``makeLeader`` does, has
assigned its new leader epoch at its log end offset. The follower lags: it lacks the leader's
last rolled segment (its active segment is the leader's previous one) and its high watermark is
below the leader's, so a copy that read it would tier less than the leader has.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.ids import to_kafka_uuid
from tierflow.kafka.batch_builder import CODEC_NONE
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    write_offset_checkpoint,
)
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from tierflow.kafka.log_dir import LogDir, PartitionLog
from tierflow.kafka.partition_metadata import PARTITION_METADATA, partition_metadata_bytes
from tierflow.kafka.segment import LogSegment

NOW_MS = 1_790_000_000_000
TEMPLATE = "template"
BROKERS = (1, 2)


@dataclass(frozen=True)
class TwoBrokers:
    base: Path
    env: dict[str, str]  # TIERFLOW_* for the CLI, tasks and DAG runs
    topics: dict[str, str]  # name -> topic id
    partitions: int  # per topic
    log_dirs: dict[int, Path]

    @property
    def settings(self) -> Settings:
        return Settings.from_env(self.env)

    def leader_of(self, partition: int) -> int:
        return BROKERS[partition % 2]

    def leader_log(self, topic: str, partition: int) -> PartitionLog:
        return LogDir(self.log_dirs[self.leader_of(partition)]).partition(topic, partition)


def build_two_brokers(
    base: Path, *, topics: tuple[str, ...], partitions: int, segments: int = 2
) -> TwoBrokers:
    """``topics`` x ``partitions`` partitions on two brokers, replication factor 2."""
    template = _template(base / "template-logs", segments)
    log_dirs = {broker: base / f"broker-{broker}" / "kafka-logs" for broker in BROKERS}
    ids = {name: to_kafka_uuid(uuid.uuid5(uuid.NAMESPACE_URL, name)) for name in topics}
    leader, follower = _replica_files(template)
    checkpoints: dict[int, dict[str, dict]] = {b: {} for b in BROKERS}
    for name in topics:
        for number in range(partitions):
            for broker in BROKERS:
                leads = broker == BROKERS[number % 2]
                replica = leader if leads else follower
                directory = log_dirs[broker] / f"{name}-{number}"
                _link_replica(directory, replica, ids[name])
                for checkpoint, value in replica.checkpoints.items():
                    checkpoints[broker].setdefault(checkpoint, {})[(name, number)] = value
    for broker, found in checkpoints.items():
        for checkpoint, values in found.items():
            write_offset_checkpoint(log_dirs[broker] / checkpoint, values)
    env = {
        "TIERFLOW_DATA_DIR": str(base / "data"),
        "TIERFLOW_BROKERS": ",".join(f"{b}={log_dirs[b]}" for b in BROKERS),
        "TIERFLOW_LOG_DIRS": os.pathsep.join(str(log_dirs[b]) for b in BROKERS),
    }
    return TwoBrokers(base, env, ids, partitions, log_dirs)


@dataclass(frozen=True)
class Replica:
    files: list[Path]
    epochs: list[EpochEntry]
    checkpoints: dict[str, int]


def _template(path: Path, segments: int) -> Path:
    spec = TopicSpec(name=TEMPLATE, partitions=1, segments=segments, codecs=(CODEC_NONE,))
    generate_log_dir(path, topics=(spec,), seed=5, now_ms=NOW_MS, segment_bytes=16 * 1024)
    return path / f"{TEMPLATE}-0"


def _replica_files(template: Path) -> tuple[Replica, Replica]:
    """The leader's files (all, with a new epoch at its log end) and the lagging follower's."""
    log_ = LogDir(template.parent).partition(TEMPLATE, 0)
    segments = log_.segments()
    epochs = read_leader_epoch_checkpoint(template / LEADER_EPOCH_CHECKPOINT)
    log_end = log_.log_end_offset()
    start = log_.log_start_offset()
    files = [p for p in template.iterdir() if p.name not in (PARTITION_METADATA,)]
    files = [p for p in files if p.name != LEADER_EPOCH_CHECKPOINT]
    high_watermark = log_.high_watermark()
    assert high_watermark is not None
    leader = Replica(
        files,
        [*epochs, EpochEntry(epochs[-1].epoch + 1, log_end)],
        {
            REPLICATION_OFFSET_CHECKPOINT: high_watermark,
            LOG_START_OFFSET_CHECKPOINT: start,
            RECOVERY_POINT_OFFSET_CHECKPOINT: log_end,
        },
    )
    # The follower lacks the leader's active segment and its last rolled one.
    follower_files = [p for p in files if not _in_segment(p, segments[-1])]
    follower_end = segments[-2].base_offset
    follower_files = [p for p in follower_files if not _in_segment(p, segments[-2])]
    follower = Replica(
        follower_files,
        [e for e in epochs if e.start_offset < follower_end] or epochs[:1],
        {
            REPLICATION_OFFSET_CHECKPOINT: min(high_watermark, follower_end),
            LOG_START_OFFSET_CHECKPOINT: start,
            RECOVERY_POINT_OFFSET_CHECKPOINT: follower_end,
        },
    )
    return leader, follower


def _in_segment(path: Path, segment: LogSegment) -> bool:
    return path.name.startswith(f"{segment.base_offset:020d}.")


def _link_replica(directory: Path, replica: Replica, topic_id: str) -> None:
    directory.mkdir(parents=True)
    for path in replica.files:
        os.link(path, directory / path.name)
    (directory / PARTITION_METADATA).write_bytes(partition_metadata_bytes(topic_id))
    write_leader_epoch_checkpoint(directory / LEADER_EPOCH_CHECKPOINT, replica.epochs)
