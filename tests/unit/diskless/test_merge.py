"""Merging the WAL into tiered segments: the segments are what a broker would have written, the
reads are the same bytes before and after, and only what the rules allow is merged."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from tests.diskless.diskless_support import NOW, TOPIC, TOPIC_ID, producer_batch_bytes, records
from tests.diskless.merge_support import (
    FAR_FUTURE,
    GRACE_MS,
    PARTITIONS,
    SEGMENT_BYTES,
    Consolidated,
    assert_merged_exactly_once,
    bucket_files,
    consolidated,
    expected_files,
    live_segments,
)
from tierflow.demo.diskless import DEMO_SEGMENT_BYTES, produce_demo
from tierflow.diskless.coordinates import BatchCoordinate
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.merge import MergeOptions, merge_partition, merge_targets
from tierflow.diskless.merge_plan import extend_lineage, roll_segments
from tierflow.diskless.merge_segment import ProducerState
from tierflow.diskless.models import WalObjectState
from tierflow.diskless.writer import WalWriter
from tierflow.kafka.batch_builder import ProducerFields, build_batch
from tierflow.kafka.leader_epoch import EpochEntry, entries_before, leader_epoch_checkpoint_bytes
from tierflow.lifecycle.copy.plan import CopyFailedError
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.rsm import IndexType
from tierflow.segment_refs import remote_segment

OWNER = "test:merge"
MERGED_AT = NOW + 100


def merge_all(world: Consolidated, **options: object) -> list:
    return [
        merge_partition(
            world.coordinator,
            world.store,
            world.rsm,
            world.objects,
            TOPIC_ID,
            partition,
            world.options(**options),
            owner=OWNER,
            clock=lambda: MERGED_AT,
        )
        for partition in range(PARTITIONS)
    ]


def test_merged_segments_are_the_files_the_broker_itself_wrote(tmp_path: Path) -> None:
    """The demo broker's partitions, produced into the WAL and merged at the broker's own
    segment.bytes, two segments per run: every rolled segment comes back from tiered storage
    with the broker's exact .log, .index, .timeindex, producer snapshot (carried from run to
    run) and leader-epoch entries, encrypted on the way."""
    world = produce_demo(tmp_path / "demo")
    options = _options(DEMO_SEGMENT_BYTES)
    runs = 0
    for topic_id, partition in merge_targets(world.coordinator, world.store):
        while merge_partition(
            world.coordinator,
            world.store,
            world.rsm,
            world.objects,
            topic_id,
            partition,
            options,
            owner=OWNER,
        ).merged:
            runs += 1
    assert runs >= 6
    compared = 0
    for log in world.logs:
        topic = world.store.topic(log.topic)
        rows = world.store.segments(topic.topic_id, log.partition, states=[S.COPY_SEGMENT_FINISHED])
        segments = log.segments()
        assert [r.start_offset for r in rows] == [s.base_offset for s in segments]
        checkpoint = log.leader_epoch_entries()
        for row, segment, following in zip(rows, segments, [*segments[1:], None], strict=True):
            ref = remote_segment(topic, row)
            assert b"".join(world.rsm.iter_log_segment(ref)) == segment.log_path.read_bytes()
            assert row.segment_size_bytes == segment.size_in_bytes()
            assert row.max_timestamp_ms == segment.largest_timestamp()
            assert row.leader_epochs == [(e.epoch, e.start_offset) for e in segment.leader_epochs()]
            if following is None:
                continue  # the broker's active segment: same batches, but its indexes are open
            nxt = following.base_offset
            assert row.end_offset == nxt - 1
            assert world.rsm.fetch_index(ref, IndexType.OFFSET) == segment.index_path.read_bytes()
            time_index = segment.time_index_path.read_bytes()
            assert world.rsm.fetch_index(ref, IndexType.TIMESTAMP) == time_index
            snapshot = log.producer_snapshot_path(nxt).read_bytes()
            assert world.rsm.fetch_index(ref, IndexType.PRODUCER_SNAPSHOT) == snapshot
            epochs = leader_epoch_checkpoint_bytes(entries_before(checkpoint, nxt))
            assert world.rsm.fetch_index(ref, IndexType.LEADER_EPOCH) == epochs
            compared += 1
    assert compared >= 10
    assert world.settings.storage.keyring is not None, "the demo's segments are encrypted"
    world.store.close()


def _options(segment_bytes: int) -> MergeOptions:
    return MergeOptions(
        cutoff_ms=NOW * 2,
        delete_grace_ms=GRACE_MS,
        segment_bytes=segment_bytes,
        max_segments=2,
    )


def test_a_fetch_from_offset_zero_after_the_merge_returns_the_same_bytes(tmp_path: Path) -> None:
    world = consolidated(tmp_path)
    before = {p: world.read_all(p) for p in range(PARTITIONS)}
    objects = {o.object_key for o in world.coordinator.wal_objects()}
    reports = merge_all(world)
    assert all(len(r.merged) > 2 for r in reports), "rolled at segment.bytes"
    for partition, expected in before.items():
        fetched = world.read_all(partition)
        assert fetched == expected
        log = world.coordinator.log(TOPIC_ID, partition)
        assert log.diskless_start_offset == log.high_watermark, "all of it merged"
        assert log.log_start_offset == 0 and log.byte_size == 0
        rows = world.store.segments(TOPIC_ID, partition, states=[S.COPY_SEGMENT_FINISHED])
        assert all(row.segment_size_bytes <= SEGMENT_BYTES for row in rows)
    assert_merged_exactly_once(world, before)
    # Every WAL object was emptied: used size 0, DELETING, and gone after the grace period.
    for wal in world.coordinator.wal_objects():
        assert (wal.used_size, wal.state) == (0, WalObjectState.DELETING.value)
    assert {k for r in reports for k in r.objects_emptied} == objects
    early = collect_garbage(
        world.coordinator, world.objects, now_ms=MERGED_AT, uncommitted_grace_ms=0
    )
    assert early.deleted == [], "not before the grace period: fetches may still hold them"
    assert {o.delete_after_ms for o in world.coordinator.wal_objects()} == {MERGED_AT + GRACE_MS}
    report = collect_garbage(
        world.coordinator, world.objects, now_ms=MERGED_AT + GRACE_MS, uncommitted_grace_ms=0
    )
    assert set(report.deleted) == objects
    assert bucket_files(world) == expected_files(world)
    assert not any(key.startswith("diskless/") for key in bucket_files(world))
    assert [world.read_all(p) for p in range(PARTITIONS)] == list(before.values())


def test_only_batches_committed_before_the_cutoff_are_merged(tmp_path: Path) -> None:
    world = consolidated(tmp_path, objects=4)  # objects committed at NOW + 0..3
    before = {p: world.read_all(p) for p in range(PARTITIONS)}
    first = merge_all(world, cutoff_ms=NOW + 2)
    for partition in range(PARTITIONS):
        log = world.coordinator.log(TOPIC_ID, partition)
        wal = world.coordinator.partition_batches(TOPIC_ID, partition)
        assert {b.append_time_ms for b in wal} == {NOW + 2, NOW + 3}
        assert log.diskless_start_offset == wal[0].base_offset
    partly_used = {k for r in first for k in r.objects_emptied}
    assert len(partly_used) == 2, "the first two objects emptied, the others still in use"
    # A run with a per-partition budget stops at a segment boundary; the next one goes on.
    limited = merge_all(world, max_segments=1)
    assert all(len(r.merged) == 1 for r in limited)
    merge_all(world)
    assert_merged_exactly_once(world, before)
    assert all(
        world.coordinator.log(TOPIC_ID, p).diskless_start_offset
        == world.coordinator.log(TOPIC_ID, p).high_watermark
        for p in range(PARTITIONS)
    )


def test_a_diskless_topic_without_tiering_stays_in_the_wal(tmp_path: Path) -> None:
    world = consolidated(tmp_path, objects=1)
    world.store.register_topic(
        TOPIC, TOPIC_ID, actor="test", now_ms=NOW, remote_storage_enable=False
    )
    assert merge_targets(world.coordinator, world.store) == []
    (report,) = merge_all(world)[:1]
    assert report.skipped and "remote.storage.enable=false" in report.skipped
    assert live_segments(world.store, 0) == []
    assert world.coordinator.partition_batches(TOPIC_ID, 0), "untouched"


def test_a_dry_run_changes_nothing(tmp_path: Path) -> None:
    world = consolidated(tmp_path, objects=2)
    files = bucket_files(world)
    reports = [
        merge_partition(
            world.coordinator,
            world.store,
            world.rsm,
            world.objects,
            TOPIC_ID,
            partition,
            world.options(),
            owner=OWNER,
            dry_run=True,
        )
        for partition in range(PARTITIONS)
    ]
    for report in reports:
        assert report.pending and report.merged == []
        spans = [(start, end) for start, end, _ in report.pending]
        assert spans[0][0] == 0 and all(b[0] == a[1] + 1 for a, b in pairwise(spans))
    assert bucket_files(world) == files
    assert all(live_segments(world.store, p) == [] for p in range(PARTITIONS))


def test_a_damaged_wal_object_fails_the_merge_and_leaves_the_wal_whole(tmp_path: Path) -> None:
    world = consolidated(tmp_path, objects=2)
    before = {p: world.read_all(p) for p in range(PARTITIONS)}
    victim = world.coordinator.partition_batches(TOPIC_ID, 1)[-1]
    path = Path(world.settings.remote_storage) / victim.object_key
    original = path.read_bytes()
    damaged = bytearray(original)
    damaged[victim.byte_offset + 70] ^= 0xFF
    path.write_bytes(bytes(damaged))
    with pytest.raises(CopyFailedError, match=rf"{victim.object_key}: byte {victim.byte_offset}"):
        merge_all(world)
    assert all(r[2] == S.COPY_SEGMENT_FINISHED for r in live_segments(world.store, 1))
    wal = world.coordinator.partition_batches(TOPIC_ID, 1)
    assert wal[-1] == victim, "the damaged batch and those after it are still in the WAL"
    bucket = Path(world.settings.remote_storage)
    staged = [p for p in world.settings.data_dir.rglob("*.log") if bucket not in p.parents]
    assert not staged, "the merge writes nothing to local disk"
    path.write_bytes(original)  # repaired (a real bucket would restore a version)
    merge_all(world)
    assert_merged_exactly_once(world, before)
    assert bucket_files(world) == expected_files(world)


def test_log_append_time_batches_are_merged_with_their_append_time(tmp_path: Path) -> None:
    world = consolidated(tmp_path, objects=0)
    other = "lat"
    other_id = "x2Dq7iPXQfSdD0wL4RZ0NA"
    world.store.register_topic(other, other_id, actor="t", now_ms=NOW, remote_storage_enable=True)
    world.coordinator.register_topic(other_id, 1, now_ms=NOW, timestamp_type="LogAppendTime")
    writer = WalWriter(
        world.coordinator,
        world.objects,
        buffer_max_bytes=1 << 20,
        commit_interval_ms=0,
        clock=lambda: NOW + 500,
    )
    writer.append(other_id, 0, producer_batch_bytes("a", 3, timestamp=NOW - 99_000))
    writer.flush()
    merge_partition(
        world.coordinator,
        world.store,
        world.rsm,
        world.objects,
        other_id,
        0,
        world.options(),
        owner=OWNER,
    )
    (row,) = world.store.segments(other_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    assert row.max_timestamp_ms == NOW + 500, "the append time, as the broker stamps it"
    ref = remote_segment(world.store.topic(other), row)
    time_index = world.rsm.fetch_index(ref, IndexType.TIMESTAMP)
    assert time_index == (NOW + 500).to_bytes(8, "big") + (2).to_bytes(4, "big")


def _coordinate(base: int, count: int, size: int, epoch: int = 0) -> BatchCoordinate:
    return BatchCoordinate(
        "k", 1, 1, size, TOPIC_ID, 0, base, base + count - 1, epoch, "CreateTime", 0, 0
    )


def test_segments_roll_before_a_batch_that_would_pass_segment_bytes() -> None:
    batches = [_coordinate(i * 2, 2, 400) for i in range(5)] + [_coordinate(10, 1, 5000)]
    rolled = roll_segments(batches, segment_bytes=1000)
    assert [(s.start_offset, s.end_offset, s.size_in_bytes) for s in rolled] == [
        (0, 3, 800),
        (4, 7, 800),
        (8, 9, 400),
        (10, 10, 5000),  # larger than segment.bytes: a segment of its own
    ]
    with pytest.raises(Exception, match="does not follow offset 3"):
        roll_segments([_coordinate(0, 4, 10), _coordinate(5, 1, 10)], segment_bytes=100)


def test_leader_epochs_of_a_segment_and_of_the_lineage() -> None:
    batches = [_coordinate(0, 2, 10, 1), _coordinate(2, 2, 10, 1), _coordinate(4, 1, 10, 3)]
    (segment,) = roll_segments(batches, segment_bytes=100)
    assert segment.leader_epochs == [EpochEntry(1, 0), EpochEntry(3, 4)]
    lineage = extend_lineage([EpochEntry(0, 0), EpochEntry(1, 5)], [EpochEntry(1, 9)])
    assert lineage == [EpochEntry(0, 0), EpochEntry(1, 5)], "an epoch already there adds nothing"
    assert extend_lineage(lineage, [EpochEntry(2, 5)]) == [EpochEntry(0, 0), EpochEntry(2, 5)]


def test_each_producer_snapshot_holds_every_producer_seen_so_far(tmp_path: Path) -> None:
    """Merged one segment per run, so the state crosses runs through the uploaded snapshot."""
    world = consolidated(tmp_path, objects=0)
    writer = WalWriter(world.coordinator, world.objects, buffer_max_bytes=1, commit_interval_ms=0)
    for tag, producer, epoch in (("a", 7, 0), ("b", 9, 1), ("c", -1, -1)):
        batch = build_batch(
            records(tag, 3),
            base_offset=0,
            leader_epoch=-1,
            producer=ProducerFields(
                producer_id=producer, producer_epoch=epoch, base_sequence=0 if producer >= 0 else -1
            ),
        )
        writer.append(TOPIC_ID, 0, batch)
        writer.flush()
    snapshots = []
    for _ in range(3):
        merge_partition(
            world.coordinator, world.store, world.rsm, world.objects, TOPIC_ID, 0,
            world.options(segment_bytes=1, max_segments=1), owner=OWNER,
        )  # fmt: skip
        row = world.store.segments(TOPIC_ID, 0, states=[S.COPY_SEGMENT_FINISHED])[-1]
        data = world.rsm.fetch_index(
            remote_segment(world.store.topic(TOPIC), row), IndexType.PRODUCER_SNAPSHOT
        )
        state = ProducerState.from_snapshot(data, tmp_path / "snapshot")
        snapshots.append(
            {pid: (e.last_sequence, e.last_offset) for pid, e in state.entries.items()}
        )
    assert snapshots == [{7: (2, 2)}, {7: (2, 2), 9: (2, 5)}, {7: (2, 2), 9: (2, 5)}]


def test_candidates_are_read_a_page_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = consolidated(tmp_path, objects=3)  # 18 batches per partition
    everything = world.coordinator.partition_batches(TOPIC_ID, 1)
    monkeypatch.setattr("tierflow.diskless.truncation.FIND_PAGE_ROWS", 5)
    (found,) = world.coordinator.merge_candidates(
        committed_before_ms=FAR_FUTURE, topic_id=TOPIC_ID, partition=1
    )
    assert found.batches == everything and len(everything) == 18
    (older,) = world.coordinator.merge_candidates(
        committed_before_ms=NOW + 2, topic_id=TOPIC_ID, partition=1
    )
    assert older.batches == everything[:12], "stops at the first batch committed after"
