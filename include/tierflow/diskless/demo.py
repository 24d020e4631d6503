"""The diskless demo: classic broker logs produced into diskless topics and read back.

It generates the demo's broker log directory, registers its non-transactional CreateTime
topics as diskless (same names and ids, a fresh store and bucket), and produces every batch
of every partition through the WAL writer, round-robin over the partitions, so that each WAL
object holds runs of several partitions. Then it fetches every partition back through the
diskless read path and compares the batches byte for byte with the broker's segment files:
same offsets, same leader epochs, same bytes.

Leader epochs: a broker's batch carries the epoch of the leader that appended it. The demo
moves the diskless partition's epoch forward where the classic log's does (committing what is
buffered first, since a batch takes the epoch current at its commit).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import DEMO_TOPICS
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.read import fetch_diskless
from tierflow.diskless.writer import WalWriter
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.record_batch import iter_batches
from tierflow.runtime import open_objects, open_store, partition_logs
from tierflow.storage.object_store import ObjectStore

DEMO_NOW_MS = 1_790_000_000_000
FETCH_BYTES = 1 << 20


@dataclass
class PartitionCheck:
    topic: str
    partition: int
    batches: int = 0
    bytes: int = 0
    first_offset: int = 0
    next_offset: int = 0
    objects: set[str] = field(default_factory=set)
    identical: bool = False


@dataclass
class DisklessDemo:
    settings: Settings
    checks: list[PartitionCheck]
    wal_objects: int

    @property
    def ok(self) -> bool:
        return all(check.identical for check in self.checks)


def run_diskless_demo(base: Path) -> DisklessDemo:
    """Replace ``base`` with the diskless demo and run it."""
    shutil.rmtree(base, ignore_errors=True)
    settings = Settings.embedded(base)
    topics = tuple(t for t in DEMO_TOPICS if not t.transactional and not t.log_append_time)
    generate_log_dir(settings.log_dirs[0], topics=topics, seed=7, now_ms=DEMO_NOW_MS)
    store = open_store(settings)
    coordinator = DisklessCoordinator.for_store(store)
    objects = open_objects(settings)
    logs = partition_logs(settings.log_dirs)
    classic = {(log.topic, log.partition): list(_classic_batches(log)) for log in logs}
    for topic in topics:
        mine = [log for log in logs if log.topic == topic.name]
        topic_id = str(mine[0].topic_id())
        store.register_topic(topic.name, topic_id, actor="demo", now_ms=DEMO_NOW_MS)
        starts = {log.partition: _first_offset(classic[(log.topic, log.partition)]) for log in mine}
        coordinator.register_topic(
            topic_id, topic.partitions, now_ms=DEMO_NOW_MS, start_offsets=starts
        )
    writer = WalWriter(
        coordinator,
        objects,
        storage_prefix=settings.storage_prefix,
        buffer_max_bytes=settings.diskless.append_buffer_max_bytes // 16,
        commit_interval_ms=settings.diskless.append_commit_interval_ms,
        writer_id="demo",
        keep_results=False,
    )
    _produce_round_robin(coordinator, writer, logs, classic)
    checks = [
        _check(coordinator, objects, log, classic[(log.topic, log.partition)]) for log in logs
    ]
    demo = DisklessDemo(settings, checks, len(coordinator.wal_objects()))
    store.close()
    return demo


def _classic_batches(log: PartitionLog) -> Iterator[tuple[bytes, int]]:
    """(bytes, partition leader epoch) of every batch of the partition, oldest first."""
    for segment in log.segments():
        data = segment.log_path.read_bytes()
        for header in iter_batches(segment.log_path):
            yield data[header.position : header.end_position], header.partition_leader_epoch


def _first_offset(batches: list[tuple[bytes, int]]) -> int:
    return int.from_bytes(batches[0][0][:8], "big", signed=True) if batches else 0


def _produce_round_robin(
    coordinator: DisklessCoordinator,
    writer: WalWriter,
    logs: list[PartitionLog],
    classic: dict[tuple[str, int], list[tuple[bytes, int]]],
) -> None:
    ids = {log.topic: coordinator.topic_id_of(log.topic) for log in logs}
    cursors = {key: 0 for key in classic}
    while any(cursors[key] < len(classic[key]) for key in classic):
        for key, batches in classic.items():
            if cursors[key] >= len(batches):
                continue
            data, epoch = batches[cursors[key]]
            topic_id, partition = ids[key[0]], key[1]
            if epoch > coordinator.log(topic_id, partition).leader_epoch:
                writer.flush()
                coordinator.set_leader_epoch(topic_id, partition, epoch, now_ms=DEMO_NOW_MS)
            writer.append(topic_id, partition, data, source=f"{key[0]}-{key[1]}")
            writer.poll()
            cursors[key] += 1
    writer.flush()


def _check(
    coordinator: DisklessCoordinator,
    objects: ObjectStore,
    log: PartitionLog,
    classic: list[tuple[bytes, int]],
) -> PartitionCheck:
    check = PartitionCheck(log.topic, log.partition)
    topic_id = coordinator.topic_id_of(log.topic)
    state = coordinator.log(topic_id, log.partition)
    offset = check.first_offset = state.log_start_offset
    fetched: list[bytes] = []
    while offset < state.high_watermark:
        result = fetch_diskless(
            coordinator, objects, log.topic, log.partition, offset, max_bytes=FETCH_BYTES
        )
        fetched.extend(result.batches)
        check.objects.update(result.objects_read)
        offset = result.next_offset
    check.next_offset = offset
    check.batches = len(fetched)
    check.bytes = sum(len(b) for b in fetched)
    check.identical = fetched == [data for data, _ in classic]
    return check
