"""The scheduled segment_copy run overlapping a manual ``tierflow copy``, in separate processes.

The DAG run is held at a chosen step boundary (gate.py) while the manual copy runs, then both
finish. Whatever the interleaving, each eligible segment is claimed (COPY_SEGMENT_STARTED) and
finished exactly once, the bucket holds exactly the finished objects, every offset reads back,
and the run that found a partition taken says so (its lease holder) instead of copying it again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.concurrency import checks
from tests.concurrency.backends import schedules
from tests.concurrency.copy_support import (
    MANUAL_CLI,
    SCHEDULED,
    assert_consistent,
    cli_busy_partitions,
    from_scratch,
    overlap,
)
from tests.concurrency.runs import start_together, wait_all

pytestmark = pytest.mark.slow

PARTITIONS = {"orders-0", "orders-1", "payments-0"}


@pytest.mark.parametrize(
    ("backend", "held_at"),
    schedules(
        [
            "copy.after_started#1",  # preparing orders-0: the other partitions are still free
            "copy.before_finished#4",  # orders-0 finished and released, the rest not
        ],
        # every partition prepared and uploaded, none finished
        also_on_postgresql=["copy.before_finished#1"],
    ),
)
def test_manual_copy_runs_while_the_scheduled_run_is_held(
    fresh, solo_order, tmp_path: Path, held_at: str
) -> None:
    o = overlap(fresh("env"), tmp_path)
    scheduled = o.start("scheduled", SCHEDULED)
    scheduled.gate.hold_at(held_at, solo_order(from_scratch, *SCHEDULED))

    manual = o.start("manual", MANUAL_CLI, gated=False)
    manual_outcome = manual.wait()
    busy = cli_busy_partitions(manual)
    scheduled_outcome = scheduled.wait()

    assert checks.failures(scheduled_outcome) == {}
    # The manual copy skipped exactly what the scheduled run held, and said so.
    assert manual_outcome["exit_code"] == (1 if busy else 0)
    assert busy <= PARTITIONS
    if held_at.startswith("copy.after_started"):
        assert busy == {"orders-0"}
    elif held_at == "copy.before_finished#4":
        assert busy == {"orders-1", "payments-0"}
    else:
        assert busy == PARTITIONS
    checks.assert_copied_once(o.t)
    assert_consistent(o)


def test_manual_copy_that_started_before_the_scheduled_run_finished(
    fresh, solo_order, tmp_path: Path
) -> None:
    """The manual copy reads the log and the store while the scheduled run is finalizing, and
    gets the lease only after the scheduled run released it: it must copy nothing again."""
    o = overlap(fresh("env"), tmp_path)
    scheduled = o.start("scheduled", SCHEDULED)
    scheduled.gate.hold_at("copy.before_finished#1", solo_order(from_scratch, *SCHEDULED))
    manual = o.start("manual", MANUAL_CLI)
    assert manual.gate.wait_held(), manual.output()

    assert checks.failures(scheduled.wait()) == {}
    manual_outcome = manual.wait()

    assert manual.gate.passed[0] == "copy.before_lease#1"
    assert manual_outcome["exit_code"] == 0, manual.output()
    checks.assert_copied_once(o.t)
    assert_consistent(o)


@pytest.mark.parametrize("backend", ["sqlite"])
def test_scheduled_run_while_a_manual_copy_holds_a_partition(
    fresh, solo_order, tmp_path: Path
) -> None:
    o = overlap(fresh("env"), tmp_path)
    manual = o.start("manual", MANUAL_CLI)
    manual.gate.hold_at("copy.after_started#1", solo_order(from_scratch, *MANUAL_CLI))

    scheduled_outcome = o.start("scheduled", SCHEDULED, gated=False).wait()
    manual_outcome = manual.wait()

    # The scheduled run copied what it could and ended red, naming the holder.
    failed = checks.failures(scheduled_outcome)
    assert set(failed) == {"prepare:orders-0", "summarize"}
    assert failed["prepare:orders-0"].startswith("PartitionBusyError: orders-0: copy lease")
    assert "cli:on-call" in failed["prepare:orders-0"]
    assert failed["summarize"].startswith(
        "PartitionsFailedError: 1 partition(s) were not done: orders-0 (PartitionBusyError: "
    )
    assert manual_outcome["exit_code"] == 0, manual.output()
    checks.assert_copied_once(o.t)
    assert_consistent(o)


@pytest.mark.parametrize(("backend", "stagger_ms"), schedules([0, 15], also_on_postgresql=[0]))
def test_scheduled_and_manual_copy_started_together(fresh, tmp_path: Path, stagger_ms: int) -> None:
    """Free-running, released at the same moment: whichever gets each partition copies it."""
    o = overlap(fresh("env"), tmp_path)
    runs = start_together(
        o.t.settings,
        tmp_path,
        [
            ("scheduled", SCHEDULED[0], SCHEDULED[1:], 0),
            ("manual", MANUAL_CLI[0], MANUAL_CLI[1:], stagger_ms),
        ],
    )
    scheduled_outcome, manual_outcome = wait_all(runs)

    busy = cli_busy_partitions(runs[1])
    assert manual_outcome["exit_code"] == (1 if busy else 0)
    for task, message in checks.failures(scheduled_outcome).items():
        assert task.startswith(("prepare:", "summarize")), message
        assert message.startswith(("PartitionBusyError", "PartitionsFailedError")), message
    checks.assert_copied_once(o.t)
    assert_consistent(o)
