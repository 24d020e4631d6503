"""Two segment_copy DAG runs at once: a backfill (or `tierflow airflow test-dag`) run beside the
scheduled one. Airflow's max_active_runs does not keep those apart: a backfill counts its own
active runs, and dag.test() runs outside the scheduler.

Every run of the DAG holds a partition's lease under the same owner (``copy_owner``), so that a
cleared or later run takes a killed run's lease over at once; a live earlier run is taken over
the same way. Taking over must stay safe: the later run removes the earlier run's unfinished
attempts through DELETE_SEGMENT_STARTED/FINISHED and copies them again; the earlier run's writes
are fenced by its taking of the lease, so it fails naming what it lost, and nothing is finished
twice, lost, or left in the bucket.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.concurrency import checks
from tests.concurrency.backends import schedules
from tests.concurrency.copy_support import (
    BACKFILL,
    SCHEDULED,
    assert_consistent,
    from_scratch,
    overlap,
)
from tests.concurrency.runs import start_together, wait_all
from tests.reconcile.support import plant_stale_copy
from tests.support.tiered import NOW_MS, Tiered
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = pytest.mark.slow

TAKEN_OVER = "CopyFailedError"
# What a run whose lease was taken over may report, and where.
TAKEN_OVER_ANSWERS = {
    "prepare": "LeaseLostError",  # taken over while preparing
    "finalize": TAKEN_OVER,  # its attempts were removed before it could finish them
    "summarize": "PartitionsFailedError",  # red, naming each partition that failed
}


def stale_copy_on_orders_0(t: Tiered) -> None:
    """A killed copy left orders-0's first segment COPY_SEGMENT_STARTED, objects uploaded."""
    plant_stale_copy(t, "orders", 0, NOW_MS)


def assert_attempts_resolved(o) -> None:
    """Per offset range: exactly one attempt finished; every other one was deleted, whole."""
    store = o.t.store
    for (_topic_id, _partition, start), ids in checks.started_per_offset(store).items():
        states = sorted(store.segment(i).state for i in ids)
        assert states.count(S.COPY_SEGMENT_FINISHED) == 1, (start, states)
        assert set(states) <= {S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_FINISHED}, states


@pytest.mark.parametrize(
    ("backend", "held_at"),
    schedules(["rsm.after_put#1"], also_on_postgresql=["copy.before_finished#1"]),
)
def test_a_backfill_run_takes_over_a_scheduled_run_held_mid_copy(
    fresh, solo_order, tmp_path: Path, held_at: str
) -> None:
    o = overlap(fresh("env"), tmp_path)
    scheduled = o.start("scheduled", SCHEDULED)
    scheduled.gate.hold_at(held_at, solo_order(from_scratch, *SCHEDULED))

    backfill_outcome = o.start("backfill", BACKFILL, gated=False).wait()
    scheduled_outcome = scheduled.wait()

    assert checks.failures(backfill_outcome) == {}
    failed = checks.failures(scheduled_outcome)
    lost = {"orders-0", "orders-1", "payments-0"}
    # summarize runs after failed finalize tasks too (ALL_DONE), and names what they lost.
    assert set(failed) == {f"finalize:{name}" for name in lost} | {"summarize"}
    summary = failed.pop("summarize")
    assert summary.startswith("PartitionsFailedError: 3 partition(s) were not done: "), summary
    assert all(f"{name} ({TAKEN_OVER}: " in summary for name in lost), summary
    for message in failed.values():
        assert message.startswith(f"{TAKEN_OVER}: "), message
        assert "no longer being copied" in message, message
    assert_attempts_resolved(o)
    assert_consistent(o)


def test_a_backfill_run_that_read_the_log_before_the_scheduled_run_finished(
    fresh, solo_order, tmp_path: Path
) -> None:
    """The later run planned while the earlier one was finalizing, and took the lease after it
    was released: it must find everything copied, not copy it a second time."""
    o = overlap(fresh("env"), tmp_path)
    scheduled = o.start("scheduled", SCHEDULED)
    scheduled.gate.hold_at("copy.before_finished#1", solo_order(from_scratch, *SCHEDULED))
    backfill = o.start("backfill", BACKFILL)
    assert backfill.gate.wait_held(), backfill.output()

    assert checks.failures(scheduled.wait()) == {}
    backfill_outcome = backfill.wait()

    assert backfill.gate.passed[0] == "copy.before_lease#1"
    assert checks.failures(backfill_outcome) == {}
    assert backfill_outcome["done"]["summarize"]["segments"] == 0
    checks.assert_copied_once(o.t)
    assert_consistent(o)


def test_a_run_taken_over_while_cleaning_up_cannot_start_segments(
    fresh, solo_order, tmp_path: Path
) -> None:
    """Both runs clean up the same abandoned attempt; the earlier run, whose lease the later
    one took over meanwhile, then tries to record its own attempts. Unfenced, it did, while the
    later run chose the same segments: orders-0 was copied twice."""
    t = fresh("env")
    stale_copy_on_orders_0(t)
    o = overlap(t, tmp_path)
    scheduled = o.start("scheduled", SCHEDULED)
    scheduled.gate.hold_at("copy.after_lease#1", solo_order(stale_copy_on_orders_0, *SCHEDULED))
    backfill = o.start("backfill", BACKFILL)
    backfill.gate.run_until("copy.after_lease#1")  # took over; held after DELETE_..._STARTED
    scheduled.gate.run_until("delete.after_finished#1")  # joined that delete, went on

    backfill_outcome = backfill.wait()
    scheduled_outcome = scheduled.wait()

    assert_attempts_resolved(o)
    assert checks.failures(backfill_outcome) == {}
    failed = checks.failures(scheduled_outcome)
    assert set(failed) == {"prepare:orders-0", "summarize"}
    assert failed["prepare:orders-0"].startswith("LeaseLostError: "), failed
    assert_consistent(o)


@pytest.mark.parametrize("stagger_ms", [0])
def test_two_copy_runs_started_together(fresh, tmp_path: Path, stagger_ms: int) -> None:
    o = overlap(fresh("env"), tmp_path)
    runs = start_together(
        o.t.settings,
        tmp_path,
        [
            ("scheduled", SCHEDULED[0], SCHEDULED[1:], 0),
            ("backfill", BACKFILL[0], BACKFILL[1:], stagger_ms),
        ],
    )
    for outcome in wait_all(runs):
        for task, message in checks.failures(outcome).items():
            expected = TAKEN_OVER_ANSWERS[task.split(":")[0]]
            assert message.startswith(f"{expected}: "), (task, message)
    assert_attempts_resolved(o)
    assert_consistent(o)
