"""Stuck segments, and the task instance each one is linked to."""

from __future__ import annotations

from tests.operator_view.conftest import COPY_TI, RETENTION_TI, TWO_HOURS_MS, ViewData
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.operator_view.cells import task_instance_path
from tierflow.operator_view.stuck import stuck_segments
from tierflow.tasks.attribution import (
    TaskInstanceRef,
    actor_base,
    attributed,
    current_task_instance,
    task_instance_of,
    with_task_instance,
)
from tierflow.tasks.segment_copy import copy_owner


def stuck(d: ViewData, stuck_after_s: int, now_ms: int | None = None):
    return stuck_segments(
        d.t.store,
        d.t.store.topics(),
        now_ms=d.now_ms if now_ms is None else now_ms,
        stuck_after_s=stuck_after_s,
    )


def test_started_segments_older_than_the_threshold_are_stuck(view_data: ViewData) -> None:
    d = view_data
    found = stuck(d, stuck_after_s=60)
    assert [s.segment_id for s in found] == [d.failed_delete, *d.stuck_copies]
    failed = found[0]
    assert (failed.topic, failed.partition, failed.state) == ("orders", 0, S.DELETE_SEGMENT_STARTED)
    assert failed.task_instance == RETENTION_TI
    for copy in found[1:]:
        assert (copy.topic, copy.partition, copy.state) == ("payments", 0, S.COPY_SEGMENT_STARTED)
        assert copy.task_instance == COPY_TI
        assert actor_base(copy.actor) == copy_owner({"topic": "payments", "partition": 0})
        assert copy.lease_owner == actor_base(copy.actor) and not copy.lease_live
    row = d.t.store.segment(d.stuck_copies[0])
    assert (found[1].since_ms, found[1].age_ms) == (
        row.event_timestamp_ms,
        d.now_ms - row.event_timestamp_ms,
    )
    assert found[1].size_bytes == row.segment_size_bytes


def test_the_threshold_is_strict(view_data: ViewData) -> None:
    d = view_data
    newest = max(d.t.store.segment(s).event_timestamp_ms for s in d.stuck_copies)
    at_threshold = stuck(d, stuck_after_s=TWO_HOURS_MS // 1000, now_ms=newest + TWO_HOURS_MS)
    assert d.stuck_copies[-1] not in [s.segment_id for s in at_threshold]
    just_over = stuck(d, stuck_after_s=TWO_HOURS_MS // 1000, now_ms=newest + TWO_HOURS_MS + 1)
    assert d.stuck_copies[-1] in [s.segment_id for s in just_over]
    assert stuck(d, stuck_after_s=10 * TWO_HOURS_MS) == []


def test_a_live_lease_is_reported(view_data: ViewData) -> None:
    d = view_data
    row = d.t.store.segment(d.stuck_copies[-1])
    found = stuck(d, stuck_after_s=0, now_ms=row.event_timestamp_ms + 1000)
    assert [s.lease_live for s in found if s.segment_id in d.stuck_copies] == [True, True]


def test_prepare_records_the_task_instance_as_who_started_the_copy(view_data: ViewData) -> None:
    d = view_data
    for segment_id in d.stuck_copies:
        row = d.t.store.segment(segment_id)
        assert task_instance_of(row.owner) == COPY_TI
        (started,) = d.t.store.events(segment_id=segment_id)
        assert task_instance_of(started.actor) == COPY_TI
    # ...while the lease stays the partition's stable owner, which a cleared rerun takes over.
    partition = d.t.store.partition(d.t.store.topic("payments").topic_id, 0)
    assert partition.lease_owner == copy_owner({"topic": "payments", "partition": 0})


def test_actor_strings_round_trip() -> None:
    ti = TaskInstanceRef("segment_copy", "manual__2026-11-21T10:00:00.5+00:00", "prepare", 3, 2)
    actor = with_task_instance("airflow:segment_copy:orders-3", ti)
    assert task_instance_of(actor) == ti
    assert actor_base(actor) == "airflow:segment_copy:orders-3"
    unmapped = TaskInstanceRef("remote_reconcile", "scheduled__x", "reconcile")
    assert task_instance_of(with_task_instance("a", unmapped)) == unmapped
    assert with_task_instance("cli:host:1", None) == "cli:host:1"
    for plain in ("cli:host:1", "airflow:retention_expiry", "", None, "x?garbage", "x?dag_id=d"):
        assert task_instance_of(plain) is None


def test_outside_a_task_the_actor_is_the_owner_alone() -> None:
    assert current_task_instance() is None
    assert attributed("airflow:segment_copy:orders-0") == "airflow:segment_copy:orders-0"


def test_task_instance_links_follow_the_airflow_ui_routes() -> None:
    mapped = TaskInstanceRef("segment_copy", "manual__2026-11-21T10:00:00+00:00", "prepare", 2)
    assert task_instance_path(mapped) == (
        "dags/segment_copy/runs/manual__2026-11-21T10%3A00%3A00%2B00%3A00/tasks/prepare/mapped/2"
    )
    plain = TaskInstanceRef("remote_reconcile", "scheduled__a/b", "reconcile")
    assert (
        task_instance_path(plain) == "dags/remote_reconcile/runs/scheduled__a%2Fb/tasks/reconcile"
    )
