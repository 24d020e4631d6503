"""The fast subset of the crash-injection harness, for ``make test``.

Every scenario except Spark's on the plain layout, killed at its first, middle and last kill
point, and run against a failing bucket: every storage fault plan for the copy, a transient
and a permanent one for the others (``make chaos`` tries every kill point and every plan, on
both layouts, and Spark's too). Then the checker itself: each invariant must catch the damage
it is about, or a clean report would mean nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.chaos.harness import KILL, UNINTERRUPTED, is_fault_plan, run_scenario, sample
from tests.chaos.invariants import (
    COMPLETE,
    HISTORY,
    LOCAL_AFTER_REMOTE,
    NO_ORPHANS,
    READABLE,
    check_invariants,
    read_pristine,
)
from tests.chaos.scenarios import SCENARIOS
from tests.chaos.storage_faults import FAULT_PLANS, RETRIED
from tests.retention.support import copy_all
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.lifecycle.retention.local import segment_files
from tierflow.metadata import SegmentTransition
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = pytest.mark.slow

FAST = [s for s in SCENARIOS if not s.slow]
WITH_STORAGE = [s for s in FAST if s.uses_storage]
SAMPLED_KILL_POINTS = 3


@pytest.mark.parametrize("scenario", FAST, ids=[s.name for s in FAST])
def test_sampled_kill_points_hold_every_invariant(tmp_path: Path, scenario) -> None:
    outcomes = run_scenario(scenario, "plain", tmp_path, sample_size=SAMPLED_KILL_POINTS)
    killed = [o for o in outcomes if o.point != UNINTERRUPTED]
    assert len(killed) == SAMPLED_KILL_POINTS
    assert all(o.killed and o.held(KILL) for o in killed)
    assert all(o.records_verified > 0 for o in outcomes)
    assert [(o.point, v) for o in outcomes for v in o.violations] == []


def plans_for(scenario) -> list[str]:
    return [p.name for p in FAULT_PLANS] if scenario.name == "copy" else ["transient", "fatal"]


@pytest.mark.parametrize("scenario", WITH_STORAGE, ids=[s.name for s in WITH_STORAGE])
def test_storage_faults_hold_every_invariant(tmp_path: Path, scenario) -> None:
    plans = plans_for(scenario)
    outcomes = run_scenario(scenario, "plain", tmp_path, sample_size=0, fault_plans=plans)
    faulted = [o for o in outcomes if is_fault_plan(o)]
    assert [o.point for o in faulted] == [f"storage: {name}" for name in plans]
    assert all(o.faults_injected > 0 for o in faulted)  # every plan met its faults
    assert all(o.held(RETRIED) and o.rerun_ok for o in faulted)
    assert [(o.point, v) for o in outcomes for v in o.violations] == []


def test_sample_spreads_from_first_to_last() -> None:
    points = [f"p#{n}" for n in range(1, 11)]
    assert sample(points, 3) == ["p#1", "p#5", "p#10"]
    assert sample(points, None) == points
    assert sample(points[:2], 3) == points[:2]


# -- the checker catches what it is about -----------------------------------------------------


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path)
    copy_all(t)
    return t


def finished_rows(t: Tiered, topic: str = "orders", partition: int = 0):
    topic_id = t.store.topic(topic).topic_id
    return t.store.segments(topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])


def broken(t: Tiered, pristine) -> set[str]:
    return {v.invariant for v in check_invariants(t.settings, pristine).violations}


def test_a_clean_copy_holds_everything(tiered: Tiered) -> None:
    result = check_invariants(tiered.settings, read_pristine(tiered.settings.log_dirs))
    assert result.violations == []
    assert result.records_verified > 5000


def test_a_lost_object_breaks_completeness(tiered: Tiered) -> None:
    pristine = read_pristine(tiered.settings.log_dirs)
    index = next(o for o in tiered.store.segment_objects(finished_rows(tiered)[1].segment_id))
    (tiered.bucket() / index.key).unlink()
    assert COMPLETE in broken(tiered, pristine)


def test_a_stray_object_is_an_orphan(tiered: Tiered) -> None:
    pristine = read_pristine(tiered.settings.log_dirs)
    tiered.rsm.objects.put_bytes("orders-x/0/stray.log", b"?")  # type: ignore[attr-defined]
    assert broken(tiered, pristine) == {NO_ORPHANS}


def test_a_changed_byte_is_unreadable(tiered: Tiered) -> None:
    pristine = read_pristine(tiered.settings.log_dirs)
    active = tiered.log("orders", 0).segments()[-1].log_path  # local only: no remote fallback
    with open(active, "r+b") as handle:
        handle.seek(100)
        byte = handle.read(1)
        handle.seek(100)
        handle.write(bytes([byte[0] ^ 0xFF]))
    assert broken(tiered, pristine) == {READABLE}


def test_a_local_delete_without_the_local_start_moving_is_caught(tiered: Tiered) -> None:
    pristine = read_pristine(tiered.settings.log_dirs)
    log_ = tiered.log("orders", 0)
    for path in segment_files(log_, 0):
        path.unlink(missing_ok=True)
    # Still readable (from remote storage), but deleted behind the store's back.
    assert broken(tiered, pristine) == {LOCAL_AFTER_REMOTE}


def test_a_local_delete_before_the_copy_finished_is_caught(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    pristine = read_pristine(t.settings.log_dirs)
    topic_id = t.store.topic("orders").topic_id
    t.store.ensure_partition(topic_id, 0, log_start_offset=0, local_log_start_offset=0)
    t.store.advance_local_log_start_offset(topic_id, 0, 589, actor="rogue", now_ms=NOW_MS)
    for path in segment_files(t.log("orders", 0), 0):
        path.unlink(missing_ok=True)
    copy_all(t)  # the remote copy comes only afterwards
    assert LOCAL_AFTER_REMOTE in broken(t, pristine)


def test_a_segment_left_mid_delete_breaks_the_history(tiered: Tiered) -> None:
    pristine = read_pristine(tiered.settings.log_dirs)
    row = finished_rows(tiered)[-1]
    tiered.store.transition_segment(
        SegmentTransition(row.segment_id, S.DELETE_SEGMENT_STARTED), actor="killed", now_ms=NOW_MS
    )
    # Its objects are still there too, and no FINISHED segment owns them any more.
    assert broken(tiered, pristine) == {HISTORY, NO_ORPHANS}


def test_the_harness_environment_is_clean() -> None:
    """A stray TIERFLOW_CRASH_AT in the test process would kill the wrong runs."""
    assert "TIERFLOW_CRASH_AT" not in os.environ
