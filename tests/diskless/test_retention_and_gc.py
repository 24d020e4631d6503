"""Retention deletes batches logically and shrinks their objects' used size; emptied objects
wait out a grace period (a fetch holding their coordinates still reads them); uncommitted
objects are garbage only after theirs. SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from tests.diskless.diskless_support import NOW, TOPIC, TOPIC_ID, Env, producer_batch_bytes
from tierflow.diskless.errors import DisklessError, DisklessOffsetOutOfRangeError
from tierflow.diskless.gc import collect_garbage
from tierflow.diskless.models import WalObjectState
from tierflow.diskless.retention import enforce_retention
from tierflow.diskless.writer import FlushResult
from tierflow.read.diskless import plan_fetch, read_planned

GRACE = 60_000
HOUR = 3_600_000


def _produce(env: Env, spec: list[tuple[int, int, int]], now: int) -> FlushResult:
    """One object: a batch of ``count`` records per (partition, count, timestamp)."""
    writer = env.writer(clock=lambda: now)
    for i, (partition, count, timestamp) in enumerate(spec):
        data = producer_batch_bytes(f"p{partition}-{i}", count, timestamp=timestamp)
        writer.append(TOPIC_ID, partition, data)
    flushed = writer.flush()
    assert flushed is not None
    return flushed


def _state(env: Env, key: str) -> tuple[str, int]:
    found = env.coordinator.wal_object(key)
    assert found is not None
    return found.state, found.used_size


def test_time_retention_deletes_old_batches_and_shrinks_used_size(env: Env) -> None:
    env.store.register_topic(TOPIC, TOPIC_ID, actor="t", now_ms=NOW, retention_ms=HOUR)
    old = NOW - 2 * HOUR
    first = _produce(env, [(0, 2, old), (0, 2, old), (1, 3, old)], NOW)
    second = _produce(env, [(0, 1, old), (0, 1, NOW), (1, 1, NOW)], NOW)
    deletions = enforce_retention(env.coordinator, now_ms=NOW, delete_grace_ms=GRACE)
    assert [(d.partition, d.batches_deleted, d.log_start_offset) for d in deletions] == [
        (0, 3, 5),
        (1, 1, 3),
    ]
    # The first object empties when partition 1's batch goes too.
    assert [d.objects_marked for d in deletions] == [[], [first.object_key]]
    state, used = _state(env, first.object_key)
    assert (state, used) == (WalObjectState.DELETING, 0)
    found = env.coordinator.wal_object(first.object_key)
    assert found is not None and found.delete_after_ms == NOW + GRACE
    state, used = _state(env, second.object_key)
    kept = second.batches[1].byte_size + second.batches[2].byte_size
    assert (state, used) == (WalObjectState.COMMITTED, kept)
    log0 = env.coordinator.log(TOPIC_ID, 0)
    assert (log0.log_start_offset, log0.high_watermark) == (5, 6)
    assert log0.byte_size == second.batches[1].byte_size
    with pytest.raises(DisklessOffsetOutOfRangeError, match="offset 4 is out of range"):
        plan_fetch(env.coordinator, TOPIC_ID, 0, 4)
    assert enforce_retention(env.coordinator, now_ms=NOW, delete_grace_ms=GRACE) == []


def test_size_retention_keeps_at_least_retention_bytes(env: Env) -> None:
    flushed = _produce(env, [(0, 1, NOW)] * 5, NOW)
    size = flushed.batches[0].byte_size
    env.store.register_topic(TOPIC, TOPIC_ID, actor="t", now_ms=NOW, retention_bytes=2 * size + 1)
    (deletion,) = enforce_retention(env.coordinator, now_ms=NOW, delete_grace_ms=GRACE)
    # Kafka deletes while what remains is still >= retention.bytes: 3 batches stay (3 * size).
    assert (deletion.batches_deleted, deletion.bytes_deleted) == (2, 2 * size)
    assert _state(env, flushed.object_key) == (WalObjectState.COMMITTED, 3 * size)
    assert env.coordinator.log(TOPIC_ID, 0).log_start_offset == 2


def test_an_in_flight_fetch_finishes_within_the_grace_period(env: Env) -> None:
    env.store.register_topic(TOPIC, TOPIC_ID, actor="t", now_ms=NOW, retention_ms=HOUR)
    flushed = _produce(env, [(0, 3, NOW - 2 * HOUR)], NOW - HOUR)
    plan = plan_fetch(env.coordinator, TOPIC_ID, 0, 0)  # the fetch has its coordinates
    enforce_retention(env.coordinator, now_ms=NOW, delete_grace_ms=GRACE)
    assert (
        collect_garbage(
            env.coordinator, env.objects, now_ms=NOW + GRACE - 1, uncommitted_grace_ms=GRACE
        ).deleted
        == []
    )
    fetched = read_planned(env.objects, plan)  # ...and reads them after retention ran
    assert [b[:8] for b in fetched.batches] == [b"\x00" * 8]
    report = collect_garbage(
        env.coordinator, env.objects, now_ms=NOW + GRACE, uncommitted_grace_ms=GRACE
    )
    assert report.deleted == [flushed.object_key]
    assert env.objects.stat(flushed.object_key) is None
    assert env.coordinator.wal_object(flushed.object_key) is None
    with pytest.raises(Exception, match=flushed.object_key):
        read_planned(env.objects, plan)  # a fetch arriving after the grace period fails


def test_uncommitted_objects_are_garbage_only_after_their_grace_period(env: Env) -> None:
    key = "diskless/wal/00000000-0000-4000-8000-000000000001"
    env.coordinator.register_object(key, 10, writer="dead", now_ms=NOW)
    env.objects.put_bytes(key, b"\x00" + b"x" * 9)
    early = collect_garbage(
        env.coordinator, env.objects, now_ms=NOW + GRACE - 1, uncommitted_grace_ms=GRACE
    )
    assert (early.abandoned, early.deleted) == ([], [])
    assert env.objects.stat(key) is not None
    late = collect_garbage(
        env.coordinator, env.objects, now_ms=NOW + GRACE, uncommitted_grace_ms=GRACE
    )
    assert (late.abandoned, late.deleted) == ([key], [key])
    assert env.objects.stat(key) is None and env.coordinator.wal_object(key) is None


def test_a_collector_killed_after_the_storage_delete_is_finished_by_the_next_run(env: Env) -> None:
    key = "diskless/wal/00000000-0000-4000-8000-000000000002"
    env.coordinator.register_object(key, 10, writer="dead", now_ms=NOW)
    env.objects.put_bytes(key, b"\x00" * 10)
    env.coordinator.abandon_uncommitted(now_ms=NOW + GRACE, grace_ms=GRACE)
    env.objects.delete([key])  # what the killed run got done
    report = collect_garbage(
        env.coordinator, env.objects, now_ms=NOW + GRACE, uncommitted_grace_ms=GRACE
    )
    assert report.deleted == [key] and env.coordinator.wal_objects() == []


def test_merge_candidates_are_old_prefixes_and_dropping_them_moves_only_the_wal_start(
    env: Env,
) -> None:
    first = _produce(env, [(0, 2, NOW), (0, 2, NOW), (1, 1, NOW)], NOW)
    _produce(env, [(0, 1, NOW), (1, 1, NOW)], NOW + 10)
    candidates = env.coordinator.merge_candidates(committed_before_ms=NOW + 10)
    assert [(c.partition, c.start_offset, c.end_offset) for c in candidates] == [
        (0, 0, 3),
        (1, 0, 0),
    ]
    assert candidates[0].object_keys == [first.object_key]
    budget = env.coordinator.merge_candidates(
        committed_before_ms=NOW + 11, max_bytes_per_partition=1
    )
    assert [(c.partition, len(c.batches)) for c in budget] == [(0, 1), (1, 1)]
    with pytest.raises(DisklessError, match="offset 1 is inside the batch 0-1"):
        env.coordinator.drop_merged_batches(TOPIC_ID, 0, 0, now_ms=NOW + 20, delete_grace_ms=GRACE)
    dropped = env.coordinator.drop_merged_batches(
        TOPIC_ID, 0, 3, now_ms=NOW + 20, delete_grace_ms=GRACE
    )
    assert (dropped.batches_deleted, dropped.diskless_start_offset) == (2, 4)
    assert dropped.log_start_offset == 0, "merged data is in tiered storage, not gone"
    again = env.coordinator.drop_merged_batches(
        TOPIC_ID, 0, 3, now_ms=NOW + 21, delete_grace_ms=GRACE
    )
    assert again.batches_deleted == 0 and again.diskless_start_offset == 4
    assert _state(env, first.object_key)[0] == WalObjectState.COMMITTED, "partition 1 uses it"
    env.coordinator.drop_merged_batches(TOPIC_ID, 1, 0, now_ms=NOW + 22, delete_grace_ms=GRACE)
    assert _state(env, first.object_key) == (WalObjectState.DELETING, 0)
