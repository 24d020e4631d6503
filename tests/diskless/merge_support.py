"""Helpers for the merge tests: a consolidated diskless topic with data in several WAL objects,
the storage to merge it into, and the checks every merge must pass.

A plain module (not a conftest) so the DAG and crash tests can import it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.diskless.diskless_support import NOW, TOPIC, TOPIC_ID, records
from tierflow.config import Settings
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.merge import MergeOptions, MergePlan, MergeReport, finalize_merge
from tierflow.diskless.writer import WalWriter
from tierflow.kafka.batch_builder import build_batch
from tierflow.kafka.records import CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD
from tierflow.lifecycle.copy.rewrite import RewriteResult
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import is_valid_segment_transition
from tierflow.metadata.store import MetadataStore
from tierflow.read.diskless import fetch_diskless
from tierflow.rsm import RemoteStorageManager
from tierflow.runtime import open_objects, open_storage, open_store
from tierflow.storage.object_store import ObjectStore

PARTITIONS = 3
GRACE_MS = 60_000
SEGMENT_BYTES = 2_000  # a few batches per segment: 3-6 segments per partition
FAR_FUTURE = NOW * 2


@dataclass
class Consolidated:
    """A diskless topic with tiering on, produced into WAL objects, in a Settings world."""

    settings: Settings
    store: MetadataStore
    coordinator: DisklessCoordinator
    objects: ObjectStore
    rsm: RemoteStorageManager

    def options(self, **overrides: object) -> MergeOptions:
        values: dict = {
            "cutoff_ms": FAR_FUTURE,
            "delete_grace_ms": GRACE_MS,
            "segment_bytes": SEGMENT_BYTES,
        }
        values.update(overrides)
        return MergeOptions(**values)

    def finalize(
        self, plan: MergePlan, results: Mapping[str, RewriteResult], *, owner: str, **kwargs: Any
    ) -> MergeReport:
        """finalize_merge on this world, with the tests' grace (``clock`` may be given)."""
        return finalize_merge(
            plan,
            results,
            self.coordinator,
            self.store,
            self.rsm,
            owner=owner,
            delete_grace_ms=GRACE_MS,
            **kwargs,
        )

    def read_all(self, partition: int) -> list[bytes]:
        """Every batch of the partition from its log start, through the diskless read path."""
        log = self.coordinator.log(TOPIC_ID, partition)
        offset, batches = log.log_start_offset, []
        while offset < log.high_watermark:
            result = fetch_diskless(
                self.coordinator,
                self.objects,
                TOPIC,
                partition,
                offset,
                max_bytes=1 << 16,
                store=self.store,
                rsm=self.rsm,
            )
            batches.extend(result.batches)
            offset = result.next_offset
        return batches


def consolidated(
    base: Path, *, objects: int = 4, batches: int = 6, committed_at: int = NOW, **settings: object
) -> Consolidated:
    """``objects`` WAL objects, each holding ``batches`` batches of every partition (mixed
    codecs, leader epoch 2 from the third object on), committed at ``committed_at`` + object
    index."""
    made = Settings.embedded(base, chunk_size=4096, **settings)  # type: ignore[arg-type]
    store = open_store(made)
    store.register_topic(TOPIC, TOPIC_ID, actor="test", now_ms=NOW, remote_storage_enable=True)
    coordinator = DisklessCoordinator.for_store(store)
    coordinator.register_topic(TOPIC_ID, PARTITIONS, now_ms=NOW)
    world = Consolidated(made, store, coordinator, open_objects(made), open_storage(made))
    produce(world, objects=objects, batches=batches, committed_at=committed_at)
    return world


def produce(
    world: Consolidated, *, objects: int, batches: int, committed_at: int = NOW, first: int = 0
) -> None:
    codecs = [0, CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD]
    for obj in range(first, first + objects):
        if obj == 2:
            for partition in range(PARTITIONS):
                world.coordinator.set_leader_epoch(TOPIC_ID, partition, 2, now_ms=NOW)
        writer = WalWriter(
            world.coordinator,
            world.objects,
            buffer_max_bytes=1 << 30,
            commit_interval_ms=0,
            clock=lambda obj=obj: committed_at + obj,
        )
        for n in range(batches):
            for partition in range(PARTITIONS):
                tag = f"o{obj}-p{partition}-b{n}"
                recs = records(tag, 1 + (n + partition) % 4, timestamp=NOW - 10_000 + n, size=300)
                batch = build_batch(recs, base_offset=0, leader_epoch=-1, compression=codecs[n % 4])
                writer.append(TOPIC_ID, partition, batch)
        writer.flush()


def live_segments(store: MetadataStore, partition: int) -> list[tuple[int, int, str]]:
    rows = store.segments(TOPIC_ID, partition)
    return [
        (r.start_offset, r.end_offset, r.state)
        for r in rows
        if r.state != S.DELETE_SEGMENT_FINISHED
    ]


def assert_merged_exactly_once(world: Consolidated, before: dict[int, list[bytes]]) -> None:
    """The invariants of any merge, finished or resumed: every offset readable once, the same
    bytes as before; FINISHED segments contiguous, never overlapping; nothing half-done; the
    WAL holds exactly the offsets after them; used sizes are the live batches' sizes; every
    segment's history follows Kafka's state machine."""
    for partition, expected in before.items():
        assert world.read_all(partition) == expected
        log = world.coordinator.log(TOPIC_ID, partition)
        live = live_segments(world.store, partition)
        assert all(state == S.COPY_SEGMENT_FINISHED for _, _, state in live), live
        starts = [log.log_start_offset] + [end + 1 for _, end, _ in live[:-1]]
        assert [start for start, _, _ in live] == starts, "contiguous, no offset twice"
        merged_end = live[-1][1] if live else log.log_start_offset - 1
        assert log.diskless_start_offset == merged_end + 1
        wal = world.coordinator.partition_batches(TOPIC_ID, partition)
        assert not wal or wal[0].base_offset == merged_end + 1
        assert log.byte_size == sum(b.byte_size for b in wal)
        assert world.store.partition(TOPIC_ID, partition).lease_owner is None
        for row in world.store.segments(TOPIC_ID, partition):
            previous = None
            for event in world.store.events(segment_id=row.segment_id):
                assert event.from_state == previous
                assert is_valid_segment_transition(
                    None if previous is None else S(previous), S(event.to_state)
                )
                previous = event.to_state
            assert previous == row.state
    for wal_object in world.coordinator.wal_objects():
        live_bytes = sum(
            b.byte_size for b in world.coordinator.object_batches(wal_object.object_key)
        )
        assert wal_object.used_size == live_bytes, wal_object.object_key


def bucket_files(world: Consolidated) -> set[str]:
    root = Path(world.settings.remote_storage)
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def expected_files(world: Consolidated) -> set[str]:
    """What the bucket must hold: the FINISHED segments' objects and the WAL objects known to
    the coordinator (emptied ones until the collector deletes them)."""
    keys = {o.object_key for o in world.coordinator.wal_objects()}
    for partition in range(PARTITIONS):
        for row in world.store.segments(TOPIC_ID, partition, states=[S.COPY_SEGMENT_FINISHED]):
            keys |= {o.key for o in world.store.segment_objects(row.segment_id)}
    return keys
