"""Several brokers' log dirs holding thousands of partitions, replication factor 2, in seconds.

Any number of brokers, and what a benchmark of steady-state runs needs: a *roll* that gives
chosen leaders one new segment, as a broker does when its active segment fills up. One
partition is generated for real (``tierflow.demo.broker``); every replica hard-links its files
(and one ``partition.metadata`` per topic, one ``leader-epoch-checkpoint`` per kind of
replica), so 20,000 replicas take seconds.

Partition ``p`` has replicas on brokers ``b(p)`` and ``b(p + 1)``, ``b(i) = brokers[i % n]``,
so leaders and followers spread over every broker. The template's last segment is kept back:
a leader holds the segments before it, its newest one active, its high watermark at its log end
(its ISR has caught up), so every rolled segment may be copied. The follower of every
``lag_every``-th partition lags: it lacks the leader's active segment, its high watermark is
its own log end, and it has not yet fetched the batches of the newest leader epoch, which the
leader started in its active segment (as Kafka's ``makeLeader`` does at its log end offset).
Without the controller's word the leader is then the replica with the newest epoch. The other
followers are in sync: the same files and high watermark, so leader inference finds a tie on
epoch and log end offset and, as Kafka's tooling would have to, takes the lower broker id.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.ids import to_kafka_uuid
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
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
from tierflow.kafka.records import CODEC_NONE

NOW_MS = 1_790_000_000_000
TEMPLATE = "template"
SEEDS = range(1, 64)  # the first seed whose epochs fit (see _fits) makes the template


@dataclass(frozen=True)
class Template:
    """The generated partition: its segments' base offsets, log end and leader epochs."""

    path: Path
    bases: tuple[int, ...]  # the last is the segment a roll adds
    log_end: int
    epochs: tuple[EpochEntry, ...]

    def files(self, first: int, last: int) -> list[Path]:
        """The files of segments ``first`` to ``last - 1`` (a producer snapshot goes with the
        segment whose creation took it: Kafka names it after that segment's base offset)."""
        prefixes = {f"{base:020d}." for base in self.bases[first:last]}
        return sorted(p for p in self.path.iterdir() if p.name[:21] in prefixes)

    def end_of(self, segments: int) -> int:
        """The log end offset of a replica holding the first ``segments`` segments."""
        return self.bases[segments] if segments < len(self.bases) else self.log_end

    def epochs_below(self, offset: int) -> list[EpochEntry]:
        return [e for e in self.epochs if e.start_offset < offset]


@dataclass(frozen=True)
class ClusterLogs:
    base: Path
    env: dict[str, str]  # TIERFLOW_* for the CLI, tasks and DAG runs
    topics: dict[str, str]  # name -> topic id
    partitions: int  # per topic
    log_dirs: dict[int, Path]
    template: Template
    lag_every: int

    @property
    def settings(self) -> Settings:
        return Settings.from_env(self.env)

    @property
    def brokers(self) -> tuple[int, ...]:
        return tuple(self.log_dirs)

    def replicas(self, partition: int) -> tuple[int, int]:
        """The preferred leader first, then the follower."""
        n = len(self.brokers)
        return self.brokers[partition % n], self.brokers[(partition + 1) % n]

    def lagging(self, partition: int) -> bool:
        return partition % self.lag_every == 0

    def leader_of(self, partition: int) -> int:
        """The broker leader inference finds (an in-sync pair ties: the lower id)."""
        replicas = self.replicas(partition)
        return replicas[0] if self.lagging(partition) else min(replicas)

    def leader_log(self, topic: str, partition: int) -> PartitionLog:
        return LogDir(self.log_dirs[self.leader_of(partition)]).partition(topic, partition)

    def partition_keys(self) -> list[tuple[str, int]]:
        return [(name, p) for name in self.topics for p in range(self.partitions)]


def build_cluster(
    base: Path,
    *,
    topics: Sequence[str],
    partitions: int,
    brokers: int = 3,
    segments: int = 2,
    lag_every: int = 2,
    now_ms: int = NOW_MS,
) -> ClusterLogs:
    """``topics`` x ``partitions`` partitions over ``brokers`` brokers, replication factor 2;
    each leader holds ``segments`` segments (all but the last rolled), timestamps up to
    ``now_ms``."""
    if brokers < 2:
        raise ValueError(f"brokers={brokers}: replication factor 2 needs at least two brokers")
    template = _template(base / "template-logs", segments, now_ms)
    ids = {name: to_kafka_uuid(uuid.uuid5(uuid.NAMESPACE_URL, name)) for name in topics}
    log_dirs = {b: base / f"broker-{b}" / "kafka-logs" for b in range(1, brokers + 1)}
    cluster = ClusterLogs(base, {}, ids, partitions, log_dirs, template, lag_every)
    shared = _shared_files(base / "shared", cluster, segments)
    files = {held: template.files(0, held) for held in (segments - 1, segments)}
    checkpoints: dict[int, dict[str, dict[tuple[str, int], int]]] = {b: {} for b in log_dirs}
    for name in topics:
        for number in range(partitions):
            for broker in cluster.replicas(number):
                held = _held_segments(cluster, broker, number, segments)
                directory = log_dirs[broker] / f"{name}-{number}"
                directory.mkdir(parents=True)
                for path in files[held]:
                    os.link(path, directory / path.name)
                os.link(shared[name], directory / PARTITION_METADATA)
                os.link(shared[held], directory / LEADER_EPOCH_CHECKPOINT)
                for checkpoint, value in _checkpoints(template.end_of(held)).items():
                    checkpoints[broker].setdefault(checkpoint, {})[(name, number)] = value
    for broker, found in checkpoints.items():
        for checkpoint, values in found.items():
            write_offset_checkpoint(log_dirs[broker] / checkpoint, values)
    env = {
        "TIERFLOW_DATA_DIR": str(base / "data"),
        "TIERFLOW_BROKERS": ",".join(f"{b}={path}" for b, path in log_dirs.items()),
        "TIERFLOW_LOG_DIRS": os.pathsep.join(str(path) for path in log_dirs.values()),
    }
    cluster.env.update(env)
    return cluster


def roll(cluster: ClusterLogs, keys: Iterable[tuple[str, int]]) -> int:
    """Give each partition's leader the template's next segment, as a roll does: its active
    segment becomes rolled, and its high watermark moves to the new log end (the ISR caught
    up), so that segment may be copied now. Returns the segments rolled."""
    template = cluster.template
    held = len(template.bases) - 1
    end = template.end_of(held + 1)
    by_broker: dict[int, list[tuple[str, int]]] = {}
    for topic, partition in keys:
        leader = cluster.leader_of(partition)
        directory = cluster.log_dirs[leader] / f"{topic}-{partition}"
        for path in template.files(held, held + 1):
            os.link(path, directory / path.name)  # FileExistsError: rolled already
        # Atomic replace: the linked checkpoint other replicas share is left alone.
        write_leader_epoch_checkpoint(
            directory / LEADER_EPOCH_CHECKPOINT, template.epochs_below(end)
        )
        by_broker.setdefault(leader, []).append((topic, partition))
    for broker, rolled in by_broker.items():
        for checkpoint, value in _checkpoints(end).items():
            path = cluster.log_dirs[broker] / checkpoint
            offsets = read_offset_checkpoint(path)
            offsets.update((key, value) for key in rolled)
            write_offset_checkpoint(path, offsets)
    return sum(len(rolled) for rolled in by_broker.values())


def _held_segments(cluster: ClusterLogs, broker: int, partition: int, segments: int) -> int:
    """A leader or in-sync follower holds ``segments``; a lagging follower one fewer."""
    leader, _ = cluster.replicas(partition)
    return segments if broker == leader or not cluster.lagging(partition) else segments - 1


def _checkpoints(log_end: int) -> dict[str, int]:
    """High watermark and recovery point at the replica's log end; nothing deleted yet."""
    return {
        REPLICATION_OFFSET_CHECKPOINT: log_end,
        RECOVERY_POINT_OFFSET_CHECKPOINT: log_end,
        LOG_START_OFFSET_CHECKPOINT: 0,
    }


def _shared_files(path: Path, cluster: ClusterLogs, segments: int) -> dict[str | int, Path]:
    """One partition.metadata per topic, one leader-epoch-checkpoint per segment count held."""
    path.mkdir(parents=True)
    files: dict[str | int, Path] = {}
    for name, topic_id in cluster.topics.items():
        files[name] = path / f"{name}.{PARTITION_METADATA}"
        files[name].write_bytes(partition_metadata_bytes(topic_id))
    template = cluster.template
    for held in (segments - 1, segments):
        files[held] = path / f"{held}.{LEADER_EPOCH_CHECKPOINT}"
        write_leader_epoch_checkpoint(files[held], template.epochs_below(template.end_of(held)))
    return files


def _template(path: Path, segments: int, now_ms: int) -> Template:
    """The generated partition, from the first seed whose leader epochs fit (``_fits``)."""
    if segments < 2:
        raise ValueError(f"segments={segments}: a lagging follower needs two segments or more")
    for seed in SEEDS:
        work = path / f"seed-{seed}"
        spec = TopicSpec(name=TEMPLATE, partitions=1, segments=segments, codecs=(CODEC_NONE,))
        generate_log_dir(work, topics=(spec,), seed=seed, now_ms=now_ms, segment_bytes=16 * 1024)
        log_ = LogDir(work).partition(TEMPLATE, 0)
        bases = tuple(s.base_offset for s in log_.segments())
        epochs = tuple(read_leader_epoch_checkpoint(log_.path / LEADER_EPOCH_CHECKPOINT))
        template = Template(log_.path, bases, log_.log_end_offset(), epochs)
        if _fits(template, segments):
            return template
        shutil.rmtree(work)
    raise RuntimeError(f"no seed in {SEEDS} gives a template whose leader epochs fit")


def _fits(template: Template, segments: int) -> bool:
    """The leader's newest epoch starts in its active segment, after a lagging follower's end."""
    follower = template.epochs_below(template.end_of(segments - 1))
    leader = template.epochs_below(template.end_of(segments))
    return bool(follower) and leader[-1].epoch > follower[-1].epoch
