"""Generate a Kafka broker log directory that looks like a live broker's.

``make demo`` and the tests need real segment files to tier, but running Kafka is slow and
heavy. This writes what a broker would: partition directories with rolled and active segments,
their indexes and producer snapshots, leader-epoch checkpoints, ``partition.metadata``, and the
root offset checkpoints and ``meta.properties``. The same seed and ``now_ms`` give the same bytes.
"""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tierflow.demo.partition_log import PartitionLayout, PartitionLogWriter
from tierflow.demo.producers import ProducerSpec, topic_producers
from tierflow.demo.topics import DEMO_TOPICS, TopicSpec
from tierflow.demo.workload import PartitionTraffic, Timeline
from tierflow.ids import METADATA_TOPIC_ID, ZERO_UUID, to_kafka_uuid
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    write_offset_checkpoint,
)
from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.kafka.meta_properties import META_PROPERTIES
from tierflow.kafka.partition_metadata import write_partition_metadata
from tierflow.kafka.txn_index import AbortedTxn

__all__ = [
    "DEMO_TOPICS",
    "GeneratedLogDir",
    "GeneratedPartition",
    "TopicSpec",
    "generate_log_dir",
]

PARTITION_METADATA = "partition.metadata"
BROKER_ID = 0
MIN_SEGMENT_BYTES = 16 * 1024  # the largest demo batch must fit a segment with room to spare
ACTIVE_INDEX_BYTES = 8 * 1024  # preallocated size of the active indexes (Kafka: 10 MiB)

_HISTORY_MS = 3 * 24 * 3600 * 1000  # records spread over the last three days
_TIME_INDEX_ENTRY_BYTES = 12


def active_index_bytes(segment_bytes: int, index_interval_bytes: int) -> int:
    """Preallocated size of an active index: never less than a full segment's entries need.

    A broker rolls when either the log or its index is full; sizing the index for a full
    segment keeps the roll on segment.bytes, as with Kafka's 10 MiB default.
    """
    most_entries = segment_bytes // index_interval_bytes + 2
    return max(ACTIVE_INDEX_BYTES, most_entries * _TIME_INDEX_ENTRY_BYTES)


@dataclass(frozen=True)
class GeneratedPartition:
    """What was written for one partition, to check readers and lifecycle code against."""

    topic: str
    partition: int
    topic_id: str
    path: Path
    segment_base_offsets: tuple[int, ...]  # ascending; the last one is the active segment
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    recovery_point: int
    leader_epochs: tuple[EpochEntry, ...]
    aborted_txns: tuple[AbortedTxn, ...]

    @property
    def active_base_offset(self) -> int:
        return self.segment_base_offsets[-1]


@dataclass(frozen=True)
class GeneratedLogDir:
    path: Path
    cluster_id: str
    now_ms: int
    partitions: tuple[GeneratedPartition, ...]  # sorted by (topic, partition)

    def partition(self, topic: str, partition: int) -> GeneratedPartition:
        for generated in self.partitions:
            if (generated.topic, generated.partition) == (topic, partition):
                return generated
        raise KeyError(f"{self.path}: no generated partition {topic}-{partition}")


def generate_log_dir(
    path: str | Path,
    *,
    topics: tuple[TopicSpec, ...] = DEMO_TOPICS,
    seed: int = 7,
    now_ms: int | None = None,
    segment_bytes: int = 64 * 1024,
    index_interval_bytes: int = 4096,
) -> GeneratedLogDir:
    """Write a broker log dir at ``path`` (absent or empty); byte-identical per seed and now_ms.

    Without ``now_ms`` the records end just before the wall clock, so time-based retention
    behaves as on a live broker, but then two runs differ in their timestamps.
    """
    path = Path(path)
    _check_arguments(path, topics, segment_bytes, index_interval_bytes)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    path.mkdir(parents=True, exist_ok=True)
    partitions = []
    for topic in topics:
        topic_id = _seeded_kafka_uuid(random.Random(f"{seed}:topic-id:{topic.name}"))
        producers = topic_producers(topic, random.Random(f"{seed}:producers:{topic.name}"))
        for number in range(topic.partitions):
            sizes = (segment_bytes, index_interval_bytes)
            partitions.append(
                _generate_partition(path, topic, number, topic_id, producers, seed, now, sizes)
            )
    partitions.sort(key=lambda p: (p.topic, p.partition))
    _write_root_checkpoints(path, partitions)
    cluster_id = _seeded_kafka_uuid(random.Random(f"{seed}:cluster-id"))
    directory_id = _seeded_kafka_uuid(random.Random(f"{seed}:directory-id"))
    _write_meta_properties(path, cluster_id, directory_id, now)
    return GeneratedLogDir(
        path=path, cluster_id=cluster_id, now_ms=now, partitions=tuple(partitions)
    )


def _generate_partition(
    path: Path,
    topic: TopicSpec,
    number: int,
    topic_id: str,
    producers: tuple[ProducerSpec, ...],
    seed: int,
    now: int,
    sizes: tuple[int, int],
) -> GeneratedPartition:
    """One partition's dir: its traffic replayed into segments, then partition.metadata."""
    segment_bytes, index_interval_bytes = sizes
    rng = random.Random(f"{seed}:partition:{topic.name}-{number}")
    directory = path / f"{topic.name}-{number}"
    log = PartitionLogWriter(
        directory,
        log_start_offset=topic.start_offset,
        segment_bytes=segment_bytes,
        index_interval_bytes=index_interval_bytes,
        preallocated_index_bytes=active_index_bytes(segment_bytes, index_interval_bytes),
    )
    active_fill = int(segment_bytes * rng.uniform(0.3, 0.6))
    end_ms = now - rng.randint(60_000, 600_000)
    timeline = Timeline(
        start_ms=end_ms - _HISTORY_MS - rng.randint(0, 3_600_000),
        end_ms=end_ms,
        expected_bytes=topic.segments * segment_bytes + active_fill,
    )
    PartitionTraffic(
        log,
        topic=topic,
        producers=producers,
        rng=rng,
        timeline=timeline,
        active_fill_bytes=active_fill,
    ).run()
    layout = log.close()
    write_partition_metadata(directory / PARTITION_METADATA, topic_id)
    lagging = number in topic.lagging_partitions
    return _describe(topic, number, topic_id, directory, layout, lagging=lagging)


def _check_arguments(
    path: Path, topics: tuple[TopicSpec, ...], segment_bytes: int, index_interval_bytes: int
) -> None:
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise FileExistsError(f"{path}: refusing to generate into a non-empty log dir")
    if segment_bytes < MIN_SEGMENT_BYTES:
        raise ValueError(f"segment_bytes must be >= {MIN_SEGMENT_BYTES}, got {segment_bytes}")
    if index_interval_bytes < 0:
        raise ValueError(f"index_interval_bytes must be >= 0, got {index_interval_bytes}")
    names = [topic.name for topic in topics]
    if len(set(names)) != len(names):
        raise ValueError(f"topic names must be unique: {names}")


def _high_watermark(layout: PartitionLayout, *, lagging: bool) -> int:
    """The log end offset, or for a lagging partition a batch start inside the last rolled
    segment, so that segment is not yet below the high watermark and must not be tiered."""
    if not lagging:
        return layout.log_end_offset
    last_rolled = layout.segments[-2]
    later_batches = last_rolled.batch_base_offsets[1:]
    return later_batches[len(later_batches) // 2]


def _describe(
    topic: TopicSpec,
    number: int,
    topic_id: str,
    directory: Path,
    layout: PartitionLayout,
    *,
    lagging: bool,
) -> GeneratedPartition:
    active = layout.segments[-1]
    return GeneratedPartition(
        topic=topic.name,
        partition=number,
        topic_id=topic_id,
        path=directory,
        segment_base_offsets=tuple(segment.base_offset for segment in layout.segments),
        log_start_offset=layout.segments[0].base_offset,
        log_end_offset=layout.log_end_offset,
        high_watermark=_high_watermark(layout, lagging=lagging),
        # A live broker flushes on roll, so everything before the active segment is recovered.
        recovery_point=active.base_offset,
        leader_epochs=layout.leader_epochs,
        aborted_txns=tuple(txn for segment in layout.segments for txn in segment.aborted),
    )


def _write_root_checkpoints(path: Path, partitions: list[GeneratedPartition]) -> None:
    def offsets(attribute: str) -> dict[tuple[str, int], int]:
        return {(p.topic, p.partition): getattr(p, attribute) for p in partitions}

    write_offset_checkpoint(path / REPLICATION_OFFSET_CHECKPOINT, offsets("high_watermark"))
    write_offset_checkpoint(path / LOG_START_OFFSET_CHECKPOINT, offsets("log_start_offset"))
    write_offset_checkpoint(path / RECOVERY_POINT_OFFSET_CHECKPOINT, offsets("recovery_point"))


def _write_meta_properties(path: Path, cluster_id: str, directory_id: str, now_ms: int) -> None:
    """Java Properties text as a KRaft broker stores it (version 1, with node.id)."""
    stamp = datetime.fromtimestamp(now_ms / 1000, tz=UTC).strftime("%a %b %d %H:%M:%S UTC %Y")
    lines = [
        "#",
        f"#{stamp}",
        f"broker.id={BROKER_ID}",
        f"cluster.id={cluster_id}",
        f"directory.id={directory_id}",
        f"node.id={BROKER_ID}",
        "version=1",
    ]
    (path / META_PROPERTIES).write_text("\n".join(lines) + "\n", encoding="utf-8")


def _seeded_kafka_uuid(rng: random.Random) -> str:
    """Like tierflow.ids.new_kafka_uuid, but reproducible: no leading '-', never reserved."""
    while True:
        text = to_kafka_uuid(uuid.UUID(int=rng.getrandbits(128), version=4))
        if not text.startswith("-") and text not in (ZERO_UUID, METADATA_TOPIC_ID):
            return text
