"""A retention_expiry backfill of an earlier night overlapping the nightly run.

Airflow counts a backfill's active runs apart from the scheduled ones, so the two really run at
once. Both expire local files and remote segments of the same partitions; one is held at a step
boundary (gate.py) while the other runs, or both are started together. Whatever the order:
every expired remote segment goes DELETE_SEGMENT_STARTED -> FINISHED once, each local file is
deleted by one run (and reported by that run only), the start offsets end where a single run
would leave them, no local segment goes without a verified remote copy, every offset still in
the log reads back, and neither run fails.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pytest

from tests.chaos.invariants import read_pristine
from tests.concurrency import checks
from tests.concurrency.backends import schedules
from tests.concurrency.retention_support import (
    BACKFILL,
    EXPIRED_LOCAL,
    EXPIRED_REMOTE,
    NEW_LOCAL_LOG_START,
    NEW_LOG_START,
    NIGHTLY,
    local_files_gone,
    local_logs,
    tiered_and_expiring,
)
from tests.concurrency.runs import Run, start, start_together, wait_all
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = pytest.mark.slow


def expiring(fresh):
    t = fresh("env", delete_local_segments=True)
    tiered_and_expiring(t)
    return t, read_pristine(t.settings.log_dirs), local_logs(t)


def deleted_by(outcome: dict) -> tuple[list[str], list[str]]:
    """(remote segment ids, local files) this run reports it deleted itself."""
    remote, local = [], []
    for name, result in outcome["done"].items():
        if name.startswith("expire:"):
            remote += [d["segment_id"] for d in result["remote_report"]["deleted"]]
            local += result.get("local_report", {}).get("files", [])
    return remote, local


def assert_expired_once(t, pristine, before, outcomes: list[dict]) -> None:
    for outcome in outcomes:
        assert checks.failures(outcome) == {}
        assert "report" in outcome["done"]
    expected_ids, expected_files = set(), set()
    for log_ in t.logs():
        topic_id = t.store.topic(log_.topic).topic_id
        rows = t.store.segments(topic_id, log_.partition)
        gone = [r.start_offset for r in rows if r.state == S.DELETE_SEGMENT_FINISHED]
        assert gone == EXPIRED_REMOTE[log_.key]
        assert all(r.state == S.COPY_SEGMENT_FINISHED for r in rows if r.start_offset not in gone)
        expected_ids |= {r.segment_id for r in rows if r.state == S.DELETE_SEGMENT_FINISHED}
        partition = t.store.partition(topic_id, log_.partition)
        assert partition.log_start_offset == NEW_LOG_START[log_.key]
        assert partition.local_log_start_offset == NEW_LOCAL_LOG_START[log_.key]
        names = pristine[log_.key].segment_files
        expected_files |= {str(log_.path / n) for b in EXPIRED_LOCAL[log_.key] for n in names[b]}
    assert local_files_gone(t, before) == EXPIRED_LOCAL
    # Each deletion was done, and reported, by exactly one of the runs.
    reported = [deleted_by(o) for o in outcomes]
    for (ids_a, files_a), (ids_b, files_b) in combinations(reported, 2):
        assert set(ids_a) & set(ids_b) == set()
        assert set(files_a) & set(files_b) == set()
    assert {i for ids, _ in reported for i in ids} == expected_ids
    assert {f for _, files in reported for f in files} == expected_files
    checks.assert_each_transition_once(t.store)
    checks.assert_bucket_is_exactly_the_finished_objects(t)
    checks.assert_invariants(t, pristine)
    checks.assert_remote_readable(t, pristine)


@pytest.mark.parametrize(
    ("backend", "held", "held_at"),
    schedules(
        [
            ("backfill", "local_retention.after_local_start#1"),  # about to unlink orders-0's
            ("backfill", "retention.after_log_start#1"),  # log start moved, nothing deleted
            ("backfill", "delete.after_started#1"),  # orders-0 [0, 588] DELETE_SEGMENT_STARTED
            ("nightly", "local_retention.after_file_delete#3"),  # halfway through a segment
        ],
        also_on_postgresql=[
            ("backfill", "local_retention.after_local_start#1"),
            ("backfill", "delete.after_started#1"),
        ],
    ),
)
def test_one_run_held_while_the_other_expires_everything(
    fresh, solo_order, tmp_path: Path, held: str, held_at: str
) -> None:
    t, pristine, before = expiring(fresh)
    runs = {"nightly": NIGHTLY, "backfill": BACKFILL}
    first = start(t.settings, tmp_path, held, *runs[held], gated=True)
    order = solo_order(tiered_and_expiring, *runs[held], delete_local_segments=True)
    first.gate.hold_at(held_at, order)
    other = "nightly" if held == "backfill" else "backfill"
    second: Run = start(t.settings, tmp_path, other, *runs[other])
    second_outcome = second.wait()
    first_outcome = first.wait()
    assert_expired_once(t, pristine, before, [first_outcome, second_outcome])


@pytest.mark.parametrize(("backend", "stagger_ms"), schedules([0, 3], also_on_postgresql=[0]))
def test_nightly_and_backfill_started_together(fresh, tmp_path: Path, stagger_ms: int) -> None:
    t, pristine, before = expiring(fresh)
    runs = start_together(
        t.settings,
        tmp_path,
        [
            ("nightly", *NIGHTLY[:1], NIGHTLY[1:], 0),
            ("backfill", *BACKFILL[:1], BACKFILL[1:], stagger_ms),
        ],
    )
    assert_expired_once(t, pristine, before, wait_all(runs))
