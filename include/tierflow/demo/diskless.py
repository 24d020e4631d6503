"""The diskless demo: produce into diskless topics, read back, merge into tiered storage, read
back again, and collect the emptied WAL objects.

1. It generates the demo's broker log directory and registers its non-transactional CreateTime
   topics as consolidated diskless topics (same names and ids; ``remote.storage.enable=true``),
   in a fresh store and bucket with an encryption key ring.
2. It produces every batch of every partition through the WAL writer, round-robin over the
   partitions, so that each WAL object holds runs of several partitions.
3. It fetches every partition back through the diskless read path and compares the batches
   byte for byte with the broker's segment files: same offsets, epochs and bytes.
4. It merges every partition's WAL into tiered segments with the merge's three steps (prepare,
   build and upload, finalize), rolled at the broker's own ``segment.bytes``: chunked,
   compressed and encrypted like any tiered segment.
5. It fetches every partition again: all of it now comes from the tiered segments, and must be
   the same bytes.
6. It runs the garbage collector once the deletion grace period is over: every WAL object was
   emptied by the merge and is deleted.

Leader epochs: a broker's batch carries the epoch of the leader that appended it. The demo
moves the diskless partition's epoch forward where the classic log's does (committing what is
buffered first, since a batch takes the epoch current at its commit).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import DEMO_TOPICS
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.gc import GcReport, collect_garbage
from tierflow.diskless.merge import MergeOptions, MergeReport, merge_partition, merge_targets
from tierflow.diskless.writer import WalWriter
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.record_batch import iter_batches
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.store import MetadataStore
from tierflow.read.diskless import fetch_diskless
from tierflow.rsm import RemoteStorageManager
from tierflow.runtime import open_objects, open_storage, open_store, partition_logs
from tierflow.storage.object_store import ObjectStore
from tierflow.transform.keyring import KeyRing
from tierflow.units import counted

DEMO_NOW_MS = 1_790_000_000_000
FETCH_BYTES = 1 << 20
DEMO_SEGMENT_BYTES = 64 * 1024  # the demo broker's segment.bytes
OWNER = "demo:diskless_merge"

Say = Callable[[str], None]


@dataclass
class PartitionCheck:
    topic: str
    partition: int
    batches: int = 0
    bytes: int = 0
    first_offset: int = 0
    next_offset: int = 0
    objects: set[str] = field(default_factory=set)
    tiered_batches: int = 0  # batches the fetch took from tiered segments
    identical: bool = False


@dataclass
class DisklessWorld:
    """The demo's diskless topics, produced, and everything needed to work on them."""

    settings: Settings
    store: MetadataStore
    coordinator: DisklessCoordinator
    objects: ObjectStore
    rsm: RemoteStorageManager
    logs: list[PartitionLog]
    classic: dict[tuple[str, int], list[tuple[bytes, int]]]  # (bytes, epoch) per partition


@dataclass
class DisklessDemo:
    settings: Settings
    checks: list[PartitionCheck]  # read back through the WAL
    wal_objects: int
    merged: list[MergeReport] = field(default_factory=list)
    tiered_checks: list[PartitionCheck] = field(default_factory=list)  # read back after merging
    gc: GcReport = field(default_factory=GcReport)
    wal_objects_left: int = 0

    @property
    def ok(self) -> bool:
        tiered = all(c.identical and c.tiered_batches == c.batches for c in self.tiered_checks)
        return (
            all(check.identical for check in self.checks)
            and len(self.tiered_checks) == len(self.checks)
            and tiered
            and len(self.gc.deleted) == self.wal_objects
            and self.wal_objects_left == 0
        )


def run_diskless_demo(base: Path, say: Say = lambda _line: None) -> DisklessDemo:
    """Replace ``base`` with the diskless demo and run it, reporting progress to ``say``."""
    world = produce_demo(base, say)
    say("reading every partition back through the diskless read path ...")
    demo = DisklessDemo(
        world.settings,
        [check_partition(world, log) for log in world.logs],
        len(world.coordinator.wal_objects()),
    )
    say(f"merging the WAL into tiered segments of {DEMO_SEGMENT_BYTES // 1024} KiB ...")
    options = MergeOptions(
        cutoff_ms=wall_clock_ms() + 1,
        delete_grace_ms=world.settings.diskless.delete_grace_ms,
        segment_bytes=DEMO_SEGMENT_BYTES,
    )
    for topic_id, partition in merge_targets(world.coordinator, world.store):
        report = merge_partition(
            world.coordinator,
            world.store,
            world.rsm,
            world.objects,
            topic_id,
            partition,
            options,
            owner=f"{OWNER}:{topic_id}-{partition}",
        )
        demo.merged.append(report)
        say(
            f"  {report.topic}-{report.partition}: {counted(len(report.merged), 'segment')}, "
            f"{counted(report.dropped_batches, 'batch', 'batches')} dropped from the WAL, "
            f"{counted(len(report.objects_emptied), 'WAL object')} emptied"
        )
    say("reading every partition back again, now from tiered storage ...")
    demo.tiered_checks = [check_partition(world, log) for log in world.logs]
    after_grace = wall_clock_ms() + world.settings.diskless.delete_grace_ms
    say("collecting garbage once the deletion grace period is over ...")
    demo.gc = collect_garbage(
        world.coordinator,
        world.objects,
        now_ms=after_grace,
        uncommitted_grace_ms=world.settings.diskless.uncommitted_grace_ms,
    )
    demo.wal_objects_left = len(world.coordinator.wal_objects())
    world.store.close()
    return demo


def produce_demo(base: Path, say: Say = lambda _line: None) -> DisklessWorld:
    """Generate the broker logs and produce them into consolidated diskless topics."""
    shutil.rmtree(base, ignore_errors=True)
    ring = KeyRing.generate(base / "keys", "demo")
    settings = Settings.embedded(base, keyring=ring.path)
    topics = tuple(t for t in DEMO_TOPICS if not t.transactional and not t.log_append_time)
    say(f"generating broker logs for {', '.join(t.name for t in topics)} ...")
    generate_log_dir(settings.log_dirs[0], topics=topics, seed=7, now_ms=DEMO_NOW_MS)
    store = open_store(settings)
    coordinator = DisklessCoordinator.for_store(store)
    objects = open_objects(settings)
    logs = partition_logs(settings.log_dirs)
    classic = {(log.topic, log.partition): list(_classic_batches(log)) for log in logs}
    for topic in topics:
        mine = [log for log in logs if log.topic == topic.name]
        topic_id = str(mine[0].topic_id())
        store.register_topic(
            topic.name, topic_id, actor="demo", now_ms=DEMO_NOW_MS, remote_storage_enable=True
        )
        starts = {log.partition: _first_offset(classic[(log.topic, log.partition)]) for log in mine}
        coordinator.register_topic(
            topic_id, topic.partitions, now_ms=DEMO_NOW_MS, start_offsets=starts
        )
    writer = WalWriter(
        coordinator,
        objects,
        storage_prefix=settings.storage.prefix,
        buffer_max_bytes=settings.diskless.append_buffer_max_bytes // 16,
        commit_interval_ms=settings.diskless.append_commit_interval_ms,
        writer_id="demo",
        keep_results=False,
    )
    say("producing every batch into diskless topics through shared WAL objects ...")
    _produce_round_robin(coordinator, writer, logs, classic)
    rsm = open_storage(settings)
    return DisklessWorld(settings, store, coordinator, objects, rsm, logs, classic)


def check_partition(world: DisklessWorld, log: PartitionLog) -> PartitionCheck:
    """Fetch the whole partition through the diskless read path (which continues from tiered
    segments below the WAL start) and compare it with the broker's batches."""
    check = PartitionCheck(log.topic, log.partition)
    topic_id = world.coordinator.topic_id_of(log.topic)
    state = world.coordinator.log(topic_id, log.partition)
    offset = check.first_offset = state.log_start_offset
    fetched: list[bytes] = []
    while offset < state.high_watermark:
        result = fetch_diskless(
            world.coordinator,
            world.objects,
            log.topic,
            log.partition,
            offset,
            max_bytes=FETCH_BYTES,
            store=world.store,
            rsm=world.rsm,
        )
        fetched.extend(result.batches)
        check.objects.update(result.objects_read)
        check.tiered_batches += len(result.tiered.batches) if result.tiered else 0
        offset = result.next_offset
    check.next_offset = offset
    check.batches = len(fetched)
    check.bytes = sum(len(b) for b in fetched)
    check.identical = fetched == [data for data, _ in world.classic[(log.topic, log.partition)]]
    return check


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
