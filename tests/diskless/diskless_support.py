"""Helpers for the diskless tests, and the entry point of the concurrent-writer processes.

A plain module rather than a conftest so that 'spawn' children can import the worker.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.writer import WalWriter
from tierflow.kafka.batch_builder import Record, build_batch
from tierflow.metadata.store import MetadataStore
from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.storage.object_store import ObjectStore

TOPIC = "events"
TOPIC_ID = "q2Dq7iPXQfSdD0wL4RZ0NA"
PARTITIONS = 3
NOW = 1_800_000_000_000
MiB = 1024 * 1024


@dataclass
class Env:
    """A migrated store with one diskless topic, its coordinator and a local bucket."""

    store: MetadataStore
    coordinator: DisklessCoordinator
    objects: ObjectStore
    bucket: Path

    def writer(self, **overrides: Any) -> WalWriter:
        options: dict[str, Any] = {
            "buffer_max_bytes": 4 * MiB,
            "commit_interval_ms": 250,
            "clock": lambda: NOW,
            "writer_id": "test-writer",
        }
        options.update(overrides)
        return WalWriter(self.coordinator, self.objects, **options)


def make_env(url: str, bucket: Path, *, timestamp_type: str = "CreateTime", **topic: Any) -> Env:
    store = MetadataStore(url)
    store.register_topic(TOPIC, TOPIC_ID, actor="test", now_ms=NOW, **topic)
    coordinator = DisklessCoordinator.for_store(store)
    coordinator.register_topic(TOPIC_ID, PARTITIONS, now_ms=NOW, timestamp_type=timestamp_type)
    return Env(store, coordinator, LocalDirectoryObjectStore(bucket), bucket)


def records(tag: str, count: int, *, timestamp: int = NOW - 1000, size: int = 20) -> list[Record]:
    """``count`` records whose values name ``tag`` and their index (to recognise them later)."""
    return [
        Record(
            key=f"{tag}-k{i}".encode(),
            value=f"{tag}#{i}:".encode().ljust(size, b"."),
            timestamp=timestamp + i,
            headers=(("h", tag.encode()),),
        )
        for i in range(count)
    ]


def producer_batch_bytes(tag: str, count: int, **kw: Any) -> bytes:
    """A batch as a producer sends it: base offset 0, partition leader epoch -1."""
    return build_batch(records(tag, count, **kw), base_offset=0, leader_epoch=-1)


def values_of(batch: bytes) -> list[bytes]:
    from kafka.record.default_records import DefaultRecordBatch

    return [record.value for record in DefaultRecordBatch(batch)]


def iter_all(
    coordinator: DisklessCoordinator, partition: int
) -> Iterator[tuple[int, int, str, int]]:
    for b in coordinator.partition_batches(TOPIC_ID, partition):
        yield b.base_offset, b.last_offset, b.object_key, b.byte_offset


# -- concurrent writers (run in 'spawn' children) ---------------------------------------------

WRITER_OBJECTS = 12  # objects per writer
WRITER_BATCHES = 4  # batches per partition per object


def batch_tag(worker: int, obj: int, partition: int, n: int) -> str:
    return f"w{worker}-o{obj}-p{partition}-b{n}"


def write_objects(url: str, bucket: str, worker: int, barrier: Any, out: Any) -> None:
    """Commit WRITER_OBJECTS objects, each holding batches for every partition; report the
    (tag, base offset) of each batch, or the error."""
    try:
        store = MetadataStore(url, migrate=False)
        writer = WalWriter(
            DisklessCoordinator.for_store(store),
            LocalDirectoryObjectStore(Path(bucket)),
            buffer_max_bytes=64 * MiB,
            commit_interval_ms=0,
            writer_id=f"worker-{worker}",
        )
        barrier.wait(timeout=60)
        assigned: list[tuple[str, int, int]] = []
        for obj in range(WRITER_OBJECTS):
            pending = []
            for n in range(WRITER_BATCHES):
                for partition in range(PARTITIONS):
                    tag = batch_tag(worker, obj, partition, n)
                    data = producer_batch_bytes(tag, 1 + (n + worker) % 3)
                    pending.append((tag, writer.append(TOPIC_ID, partition, data)))
            writer.flush()
            for tag, result in pending:
                assert result.coordinate is not None
                assigned.append((tag, result.partition, result.coordinate.base_offset))
        store.close()
        out.put((worker, assigned))
    except Exception as exc:  # reported; the parent fails the test with the message
        out.put((worker, f"{type(exc).__name__}: {exc}"))
