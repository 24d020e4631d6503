"""A generated broker log dir whose topics the store has held, and ways to change it."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.partition_metadata import write_partition_metadata


def held_broker(base: Path) -> Tiered:
    """Topics orders (partitions 0, 1) and payments (0), registered and held by this broker."""
    t = build_tiered(base)
    for log_ in t.logs():
        t.store.ensure_partition(
            t.store.topic(log_.topic).topic_id,
            log_.partition,
            log_start_offset=0,
            local_log_start_offset=0,
            now_ms=NOW_MS,
        )
    return t


def log_dir(t: Tiered) -> Path:
    return t.settings.log_dirs[0]


def topic_id(t: Tiered, name: str) -> str:
    return t.store.topic(name).topic_id


def rename_for_removal(t: Tiered, name: str, partition: int, suffix: str = "-delete") -> Path:
    """What Kafka does first when it deletes (or moves, or strays) a partition's directory."""
    source = log_dir(t) / f"{name}-{partition}"
    return source.rename(source.with_name(f"{source.name}.{uuid.uuid4().hex}{suffix}"))


def remove_partition_dir(t: Tiered, name: str, partition: int) -> None:
    shutil.rmtree(log_dir(t) / f"{name}-{partition}")


def recreate(t: Tiered, name: str, partitions: int) -> str:
    """Kafka recreating a topic under the same name: fresh dirs with a new topic id."""
    new_id = new_kafka_uuid()
    for p in range(partitions):
        path = log_dir(t) / f"{name}-{p}"
        path.mkdir()
        write_partition_metadata(path / "partition.metadata", new_id)
    return new_id
