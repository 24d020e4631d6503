"""The coordinator: commits assign offsets atomically and in order; registration; lookups.

Every test runs on SQLite and on PostgreSQL (the ``env`` fixture)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.diskless.diskless_support import NOW, TOPIC_ID, Env, producer_batch_bytes
from tierflow.diskless.errors import CommitRejectedError, UnknownDisklessPartitionError
from tierflow.diskless.models import WalObjectState
from tierflow.diskless.wal_object import WalObjectData, encode_wal_object, producer_batch
from tierflow.storage.wal_keys import new_wal_object_key


def _object(env: Env, spec: list[tuple[int, int]]) -> tuple[str, WalObjectData]:
    """Upload an object holding a batch of ``count`` records per (partition, count)."""
    wal = encode_wal_object(
        producer_batch(TOPIC_ID, p, producer_batch_bytes(f"p{p}-{i}", n), source="t")
        for i, (p, n) in enumerate(spec)
    )
    key = new_wal_object_key("")
    env.coordinator.register_object(key, wal.size, writer="t", now_ms=NOW)
    env.objects.put_bytes(key, wal.data)
    return key, wal


def test_a_commit_assigns_consecutive_offsets_per_partition_in_object_order(env: Env) -> None:
    key, wal = _object(env, [(0, 3), (1, 2), (0, 1), (2, 5)])
    committed = env.coordinator.commit_object(key, wal.batches, now_ms=NOW + 5)
    got = [(b.partition, b.base_offset, b.last_offset) for b in committed]
    assert got == [(0, 0, 2), (0, 3, 3), (1, 0, 1), (2, 0, 4)]
    key2, wal2 = _object(env, [(0, 2), (1, 1)])
    second = env.coordinator.commit_object(key2, wal2.batches, now_ms=NOW + 6)
    assert [(b.partition, b.base_offset, b.last_offset) for b in second] == [(0, 4, 5), (1, 2, 2)]
    logs = {log.partition: log for log in env.coordinator.logs(TOPIC_ID)}
    assert [logs[p].high_watermark for p in range(3)] == [6, 3, 5]
    assert logs[0].byte_size == sum(b.byte_size for b in committed + second if b.partition == 0)
    found = env.coordinator.wal_object(key)
    assert found is not None and found.object_state is WalObjectState.COMMITTED
    assert found.used_size == found.total_size - 1 and found.committed_ms == NOW + 5
    assert all(b.append_time_ms == NOW + 5 for b in committed)


def test_repeating_a_commit_returns_the_same_offsets_and_assigns_nothing_new(env: Env) -> None:
    key, wal = _object(env, [(0, 3)])
    first = env.coordinator.commit_object(key, wal.batches, now_ms=NOW)
    again = env.coordinator.commit_object(key, wal.batches, now_ms=NOW + 1)
    assert again == first
    assert env.coordinator.log(TOPIC_ID, 0).high_watermark == 3


def test_a_commit_naming_an_unknown_partition_commits_nothing(env: Env) -> None:
    """Atomic: partition 0's offsets are not taken when partition 7 fails the commit."""
    key, wal = _object(env, [(0, 3)])
    bad = [replace(wal.batches[0], partition=7)]
    with pytest.raises(UnknownDisklessPartitionError, match="-7; nothing committed"):
        env.coordinator.commit_object(key, bad, now_ms=NOW)
    assert env.coordinator.log(TOPIC_ID, 0).high_watermark == 0
    found = env.coordinator.wal_object(key)
    assert found is not None and found.object_state is WalObjectState.UPLOADING
    assert env.coordinator.partition_batches(TOPIC_ID, 0) == []


def test_commits_of_unknown_or_abandoned_objects_are_rejected(env: Env) -> None:
    key, wal = _object(env, [(0, 1)])
    with pytest.raises(CommitRejectedError, match="unknown WAL object"):
        env.coordinator.commit_object(key + "0", wal.batches, now_ms=NOW)
    assert env.coordinator.abandon_uncommitted(now_ms=NOW + 10, grace_ms=10) == [key]
    with pytest.raises(CommitRejectedError, match="is deleting: it was not committed within"):
        env.coordinator.commit_object(key, wal.batches, now_ms=NOW + 11)
    assert env.coordinator.log(TOPIC_ID, 0).high_watermark == 0


def test_find_batches_starts_at_the_batch_holding_the_offset_within_the_byte_budget(
    env: Env,
) -> None:
    key, wal = _object(env, [(0, 3)] * 6)
    committed = env.coordinator.commit_object(key, wal.batches, now_ms=NOW)
    size = committed[0].byte_size
    found = env.coordinator.find_batches(TOPIC_ID, 0, 4, 2 * size)
    assert [(b.base_offset, b.last_offset) for b in found] == [(3, 5), (6, 8)]
    assert len(env.coordinator.find_batches(TOPIC_ID, 0, 0, 1)) == 1, "at least one batch"
    assert env.coordinator.find_batches(TOPIC_ID, 0, 18, 1 << 20) == []
    assert env.coordinator.object_batches(key) == committed


def test_registration_is_idempotent_and_grows_partitions(env: Env) -> None:
    again = env.coordinator.register_topic(TOPIC_ID, 5, now_ms=NOW + 1)
    assert again.created_ms == NOW
    assert [log.partition for log in env.coordinator.logs(TOPIC_ID)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="cannot change to LogAppendTime"):
        env.coordinator.register_topic(TOPIC_ID, 5, now_ms=NOW, timestamp_type="LogAppendTime")
    assert env.coordinator.topic_id_of("events") == TOPIC_ID
    assert [e.to_state for e in env.store.events(topic_id=TOPIC_ID)][-1] == "DISKLESS_REGISTERED"


def test_leader_epochs_only_move_forward_and_are_stamped_on_commits(env: Env) -> None:
    assert env.coordinator.set_leader_epoch(TOPIC_ID, 0, 3, now_ms=NOW)
    assert not env.coordinator.set_leader_epoch(TOPIC_ID, 0, 2, now_ms=NOW)
    key, wal = _object(env, [(0, 1), (1, 1)])
    committed = env.coordinator.commit_object(key, wal.batches, now_ms=NOW)
    assert [b.leader_epoch for b in committed] == [3, 0]
    with pytest.raises(UnknownDisklessPartitionError):
        env.coordinator.set_leader_epoch(TOPIC_ID, 9, 1, now_ms=NOW)
