"""A merge attempt whose lease another attempt of the same owner took over writes nothing.

Every run of the diskless_merge DAG takes a partition's lease under the same owner, so a later
or overlapping run (a clear, a backfill, dag.test beside the scheduled run) takes it over at
once, even from an attempt that is still alive. The old attempt's writes are fenced by its
taking of the lease: it can no longer record COPY_SEGMENT_STARTED (it would merge the new
attempt's offsets a second time) nor COPY_SEGMENT_FINISHED (with the token carried through the
XCom plan to finalize), and releasing its lease leaves the new one alone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import tierflow.diskless.merge as merge
from tests.diskless.diskless_support import NOW, TOPIC_ID
from tests.diskless.merge_support import (
    Consolidated,
    assert_merged_exactly_once,
    bucket_files,
    consolidated,
    expected_files,
)
from tierflow.diskless.merge import MergePlan, prepare_merge
from tierflow.diskless.merge_job import run_merge_job
from tierflow.lifecycle.copy.plan import CopyFailedError
from tierflow.metadata.errors import LeaseLostError
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.tasks.diskless_merge import merge_plan_from_dict, merge_plan_to_dict

OWNER = "airflow:diskless_merge:events"  # the same for every run, as merge_owner makes it
GRACE_MS = 60_000


def test_a_merge_attempt_whose_lease_was_taken_over_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = consolidated(tmp_path)
    before = {p: world.read_all(p) for p in (0, 1)}
    b_plans: dict[int, MergePlan] = {}

    def prepare(partition: int, actor: str) -> MergePlan:
        return prepare_merge(
            world.coordinator,
            world.store,
            world.rsm,
            TOPIC_ID,
            partition,
            world.options(),
            owner=OWNER,
            clock=lambda: NOW + 100,
            actor=actor,
        )

    def b_takes_over(partition: int) -> None:
        b_plans[partition] = prepare(partition, "attempt-B")

    # Partition 0: A has recorded its first segment when B's prepare takes the lease over,
    # cleans that segment up and records all of its own; A then tries to record its second.
    _at(monkeypatch, "merge.after_started", lambda: b_takes_over(0))
    with pytest.raises(LeaseLostError):
        prepare(0, "attempt-A")
    a_rows = _rows_of(world, 0, "attempt-A")
    assert [r.state for r in a_rows] == [S.DELETE_SEGMENT_FINISHED], "only B's cleanup of A's"
    assert _lease(world, 0) == (OWNER, b_plans[0].copy.lease.token), "A left B's lease alone"

    # Partition 1: A is prepared and its segments uploaded; its plan goes through XCom. B's
    # prepare takes the lease over, and before B cleans up, A's finalize tries to record
    # COPY_SEGMENT_FINISHED and to drop the batches from the WAL.
    a_plan = prepare(1, "attempt-A")
    assert a_plan.job is not None and a_plan.copy.lease is not None
    a_results = _run(world, a_plan)
    a_xcom = merge_plan_from_dict(merge_plan_to_dict(a_plan, None))
    assert a_xcom.copy.lease == a_plan.copy.lease
    wal_start = world.coordinator.log(TOPIC_ID, 1).diskless_start_offset

    def a_finalizes() -> None:
        b_lease = _lease(world, 1)
        assert b_lease[1] != a_plan.copy.lease.token, "B's taking has a token of its own"
        with pytest.raises(CopyFailedError, match="took its lease over"):
            _finalize(world, a_xcom, a_results)
        assert world.coordinator.log(TOPIC_ID, 1).diskless_start_offset == wal_start
        assert _lease(world, 1) == b_lease, "A's release left B's lease alone"

    _at(monkeypatch, "merge.after_lease", a_finalizes)
    b_takes_over(1)
    assert S.COPY_SEGMENT_FINISHED not in {r.state for r in _rows_of(world, 1, "attempt-A")}

    # B merges both partitions, its plans also through XCom.
    monkeypatch.setattr(merge, "crash_point", lambda name: None)
    for partition, b_plan in b_plans.items():
        results = _run(world, b_plan)
        report = _finalize(world, merge_plan_from_dict(merge_plan_to_dict(b_plan, None)), results)
        assert report.merged
        log = world.coordinator.log(TOPIC_ID, partition)
        assert log.diskless_start_offset == log.high_watermark, "everything merged"
    assert_merged_exactly_once(world, before)  # each offset in one FINISHED segment, lease free
    assert bucket_files(world) == expected_files(world), "no orphan objects"


def _at(monkeypatch: pytest.MonkeyPatch, point: str, action: Callable[[], None]) -> None:
    """Run ``action`` the first time the merge reaches ``point`` (instead of a crash)."""
    fired = []

    def hook(name: str) -> None:
        if name == point and not fired:
            fired.append(name)
            action()

    monkeypatch.setattr(merge, "crash_point", hook)


def _run(world: Consolidated, plan: MergePlan) -> dict:
    assert plan.job is not None
    return {r.segment_id: r for r in run_merge_job(plan.job, world.objects, world.rsm)}


def _finalize(world: Consolidated, plan: MergePlan, results: dict) -> merge.MergeReport:
    return world.finalize(plan, results, owner=OWNER, clock=lambda: NOW + 200)


def _rows_of(world: Consolidated, partition: int, actor: str) -> list:
    return [r for r in world.store.segments(TOPIC_ID, partition) if r.owner == actor]


def _lease(world: Consolidated, partition: int) -> tuple[str | None, int | None]:
    row = world.store.partition(TOPIC_ID, partition)
    return row.lease_owner, row.lease_expires_ms
