"""Kafka's DeleteTopic scenario on tierflow's durable partition removal (D5-D7, §2.2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.partition_removal.support import (
    live_segments,
    objects,
    tiered_with_data,
    topic_dirs,
    topic_keys,
)
from tests.support.tiered import LAYOUTS, NOW_MS, Tiered
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.removal.remove import (
    PREFIX_SWEEP,
    PartitionRemovalError,
    mark_topic_deleted,
    remove_marked_partitions,
    remove_partition,
)
from tierflow.metadata import StartedSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import RemotePartitionDeleteState as P
from tierflow.rsm import RemoteSegment
from tierflow.storage.keys import BucketKeys, partition_prefix

ORDERS = range(2)
LATER = NOW_MS + 60_000


def remove_all(t: Tiered, *, rsm=None, store_objects=None) -> list:
    return remove_marked_partitions(
        t.store,
        rsm or t.rsm,
        store_objects or objects(t),
        prefix=t.settings.storage.prefix,
        actor="test",
        clock=lambda: LATER,
    )


def assert_removed(t: Tiered, topic_id: str, name: str = "orders") -> None:
    """Remote storage holds nothing of that topic id; every row says so."""
    assert topic_keys(t, name, topic_id) == []
    assert topic_dirs(t, name, topic_id) == []  # the local store prunes empty prefixes
    assert live_segments(t, topic_id, ORDERS) == []
    for p in ORDERS:
        job = t.store.partition_delete(topic_id, p)
        assert job is not None and job.delete_state is P.DELETE_PARTITION_FINISHED


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_deleted_topic_leaves_its_remote_storage_empty(tmp_path: Path, layout: str):
    t = tiered_with_data(tmp_path, layout)
    orders, payments = t.store.topic("orders"), t.store.topic("payments")
    payments_keys = topic_keys(t, "payments", payments.topic_id)
    assert topic_keys(t, "orders", orders.topic_id) and payments_keys
    # An object no row knows about: a copy killed before it recorded its segment.
    stray = partition_prefix(t.settings.storage.prefix, "orders", orders.topic_id, 1) + "x.log"
    objects(t).put_bytes(stray, b"orphan")

    assert mark_topic_deleted(t.store, "orders", actor="test", now_ms=LATER) == [0, 1]
    reports = remove_all(t)

    assert [(r.partition, r.finished) for r in reports] == [(0, True), (1, True)]
    assert stray in reports[1].leftover_keys
    assert sum(len(r.deleted) for r in reports) > 0
    assert_removed(t, orders.topic_id)
    assert topic_keys(t, "payments", payments.topic_id) == payments_keys
    # Done is done: nothing pending, and a direct call is a no-op.
    assert remove_all(t) == []
    again = remove_partition(
        t.store, t.rsm, objects(t), orders.topic_id, 0, where=BucketKeys(""), actor="test"
    )
    assert again.already_finished and again.deleted == []


def test_an_unfinished_copy_is_deleted_too(tmp_path: Path):
    t = tiered_with_data(tmp_path)
    orders = t.store.topic("orders")
    last = t.store.segments(orders.topic_id, 0)[-1]
    copying = t.store.add_segment(
        StartedSegment(
            segment_id=new_kafka_uuid(),
            topic_id=orders.topic_id,
            partition=0,
            start_offset=last.end_offset + 1,
            end_offset=last.end_offset + 10,
            max_timestamp_ms=NOW_MS,
            segment_leader_epochs=last.leader_epochs,
            segment_size_bytes=10,
            txn_index_empty=True,
        ),
        actor="killed-copy",
        now_ms=NOW_MS,
    )
    assert copying.state == S.COPY_SEGMENT_STARTED
    mark_topic_deleted(t.store, "orders", actor="test", now_ms=LATER)
    remove_all(t)
    assert t.store.segment(copying.segment_id).state == S.DELETE_SEGMENT_FINISHED
    assert_removed(t, orders.topic_id)


def test_duplicate_marks_are_handled_once(tmp_path: Path):
    t = tiered_with_data(tmp_path)
    topic_id = t.store.topic("orders").topic_id
    assert mark_topic_deleted(t.store, "orders", actor="a", now_ms=LATER) == [0, 1]
    assert mark_topic_deleted(t.store, "orders", actor="b", now_ms=LATER + 1) == []
    for p in ORDERS:
        events = t.store.events(topic_id=topic_id, partition=p)
        marked = [e for e in events if e.to_state == P.DELETE_PARTITION_MARKED]
        assert len(marked) == 1
        assert t.store.partition_delete(topic_id, p).marks == 2
    assert len(remove_all(t)) == 2
    # Marking after removal neither errors nor reopens it.
    assert mark_topic_deleted(t.store, "orders", actor="c", now_ms=LATER + 2) == []
    assert remove_all(t) == []
    assert_removed(t, topic_id)


def run_worker(t: Tiered, crash_at: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, **t.settings.as_env()}
    env.pop("TIERFLOW_CRASH_AT", None)
    if crash_at:
        env["TIERFLOW_CRASH_AT"] = crash_at
    command = [sys.executable, "-m", "tests.partition_removal.crash_worker", str(LATER)]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, cwd=Path.cwd()
    )


KILL_POINTS = [
    "partition_removal.after_started",
    "delete.after_started#2",  # first segment deleted, second STARTED, not deleted
    "delete.after_storage_delete#3",  # third segment's objects gone, FINISHED not recorded
    "partition_removal.after_prefix",
]


@pytest.mark.parametrize(
    ("layout", "kill_point"),
    [("plain", k) for k in KILL_POINTS] + [("chunked-encrypted", "delete.after_started#2")],
)
def test_killed_removal_resumes_without_orphans(tmp_path: Path, layout: str, kill_point: str):
    t = tiered_with_data(tmp_path, layout)
    topic_id = t.store.topic("orders").topic_id
    mark_topic_deleted(t.store, "orders", actor="test", now_ms=LATER)

    crashed = run_worker(t, kill_point)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert t.store.partition_delete(topic_id, 0).delete_state is P.DELETE_PARTITION_STARTED
    if kill_point.startswith("delete."):
        states = {row.state for row in t.store.segments(topic_id, 0)}
        assert S.DELETE_SEGMENT_STARTED in states and S.DELETE_SEGMENT_FINISHED in states

    rerun = run_worker(t, None)
    assert rerun.returncode == 0, rerun.stderr + rerun.stdout
    assert_removed(t, topic_id)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_recreated_topic_with_the_same_name_is_untouched(tmp_path: Path, layout: str):
    t = tiered_with_data(tmp_path, layout)
    old_id = t.store.topic("orders").topic_id
    mark_topic_deleted(t.store, "orders", actor="test", now_ms=LATER)
    # Start the old removal, then Kafka recreates "orders" under a new id mid-way.
    with pytest.raises(PartitionRemovalError):
        remove_all(t, rsm=FailingDeletes(t.rsm, fail_times=1))
    assert t.store.retire_topic_name(old_id, actor="test", now_ms=LATER)
    new_id = new_kafka_uuid()
    t.store.register_topic("orders", new_id, actor="test", now_ms=LATER, remote_storage_enable=True)
    for p in ORDERS:
        t.store.ensure_partition(new_id, p, log_start_offset=0, local_log_start_offset=0)
    new_keys = [
        partition_prefix(t.settings.storage.prefix, "orders", new_id, p) + f"{n}.log"
        for p in ORDERS
        for n in range(2)
    ]
    for key in new_keys:
        objects(t).put_bytes(key, b"new topic data")

    reports = remove_all(t)

    assert {r.topic_id for r in reports} == {old_id}
    assert all(r.topic == "orders" for r in reports)  # the Kafka name, not the retired one
    assert_removed(t, old_id)
    assert topic_keys(t, "orders", new_id) == sorted(new_keys)
    assert all(t.store.partition_delete(new_id, p) is None for p in ORDERS)
    assert t.store.topic("orders").topic_id == new_id


class FailingDeletes:
    """An RSM whose segment deletes fail ``fail_times`` times, like a storage outage."""

    def __init__(self, rsm, *, fail_times: int) -> None:
        self.rsm, self.left = rsm, fail_times
        self.failed: list[str] = []

    def delete_log_segment_data(self, segment: RemoteSegment) -> None:
        if self.left > 0:
            self.left -= 1
            self.failed.append(segment.segment_id)
            raise OSError("storage unavailable")
        self.rsm.delete_log_segment_data(segment)

    def __getattr__(self, name: str):
        return getattr(self.rsm, name)


class FailingObjects:
    """An object store whose first delete fails."""

    def __init__(self, objects) -> None:
        self.objects, self.failed = objects, False

    def delete(self, keys) -> None:
        if not self.failed:
            self.failed = True
            raise OSError("storage unavailable")
        self.objects.delete(keys)

    def __getattr__(self, name: str):
        return getattr(self.objects, name)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_failed_segment_delete_is_retried_by_the_next_call(tmp_path: Path, layout: str):
    t = tiered_with_data(tmp_path, layout)
    topic_id = t.store.topic("orders").topic_id
    mark_topic_deleted(t.store, "orders", actor="test", now_ms=LATER)
    flaky = FailingDeletes(t.rsm, fail_times=1)

    with pytest.raises(PartitionRemovalError) as raised:
        remove_all(t, rsm=flaky)

    failed = flaky.failed[0]
    assert [e.what for r in raised.value.reports for e in r.errors] == [failed]
    assert t.store.segment(failed).state == S.DELETE_SEGMENT_STARTED
    assert live_segments(t, topic_id, ORDERS) == [failed]  # the others kept going
    assert t.store.partition_delete(topic_id, 0).delete_state is P.DELETE_PARTITION_STARTED
    assert topic_keys(t, "orders", topic_id)  # the failed segment's objects are still there

    reports = remove_all(t)
    assert [failed] == [s for r in reports for s in r.deleted]
    assert_removed(t, topic_id)


def test_a_failed_prefix_sweep_is_retried_by_the_next_call(tmp_path: Path):
    t = tiered_with_data(tmp_path)
    topic_id = t.store.topic("orders").topic_id
    stray = partition_prefix("", "orders", topic_id, 0) + "stray.log"
    objects(t).put_bytes(stray, b"orphan")
    mark_topic_deleted(t.store, "orders", actor="test", now_ms=LATER)

    with pytest.raises(PartitionRemovalError) as raised:
        remove_all(t, store_objects=FailingObjects(objects(t)))
    assert [e.what for r in raised.value.reports for e in r.errors] == [PREFIX_SWEEP]
    assert t.store.partition_delete(topic_id, 0).delete_state is P.DELETE_PARTITION_STARTED

    remove_all(t)
    assert_removed(t, topic_id)


def test_copy_and_retention_leave_partitions_being_removed_alone(tmp_path):
    """Once a topic is marked deleted, its partitions are remote partition removal's only."""
    from tests.support.tiered import NOW_MS, build_tiered
    from tierflow.lifecycle.removal.remove import mark_topic_deleted
    from tierflow.tasks.retention import list_retention_targets
    from tierflow.tasks.segment_copy import list_copy_targets

    t = build_tiered(tmp_path)
    for log_ in t.logs():
        t.store.ensure_partition(
            t.store.topic(log_.topic).topic_id,
            log_.partition,
            log_start_offset=0,
            local_log_start_offset=0,
        )
    mark_topic_deleted(t.store, "orders", actor="test", now_ms=NOW_MS)
    assert {x["topic"] for x in list_copy_targets(t.settings)} == {"payments"}
    assert {x["topic"] for x in list_retention_targets(t.settings)} == {"payments"}
