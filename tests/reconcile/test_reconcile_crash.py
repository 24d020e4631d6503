"""Reconcile killed with a real SIGKILL at each step boundary: the next run ends where an
uninterrupted run would have.

"Next" is the next weekly run, past the row grace: a delete that the killed run had just
started is DELETE_SEGMENT_STARTED with a fresh timestamp, indistinguishable from a delete in
progress, so it is finished once it is older than the grace (or by nightly retention, which
retries every DELETE_SEGMENT_STARTED first).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reconcile.support import (
    ACTOR,
    DAY_MS,
    HOUR_MS,
    Planted,
    bucket_keys,
    build_planted,
    keys_of,
    objects,
)
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.reconcile import FindingKind as K
from tierflow.lifecycle.reconcile import (
    ReconcileGrace,
    ReconcileScope,
    apply_reconcile,
    plan_reconcile,
)
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.tasks.reconcile import reconcile

PROJECT_ROOT = Path(__file__).resolve().parents[2]
APPLY = "from tierflow.tasks.reconcile import reconcile; reconcile(apply=True, grace_hours=None)"


def run_killed(planted: Planted, crash_at: str) -> subprocess.CompletedProcess:
    env = {**os.environ, **planted.t.settings.as_env(), "TIERFLOW_CRASH_AT": crash_at}
    return subprocess.run(
        [sys.executable, "-c", APPLY],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=PROJECT_ROOT,
    )


@pytest.mark.parametrize(
    "crash_at",
    [
        "reconcile.after_stale_delete",
        "delete.after_started#2",  # in the stale copy's delete, after DELETE_SEGMENT_STARTED
        "reconcile.after_stale_copy",
        "reconcile.after_object_delete#2",
    ],
)
def test_a_killed_apply_is_finished_by_the_rerun(tmp_path: Path, crash_at: str) -> None:
    planted = build_planted(tmp_path)
    t = planted.t
    gone = planted.old_orphans | keys_of(t, planted.stale_copy) | keys_of(t, planted.stale_delete)
    expected_keys = bucket_keys(t) - gone

    killed = run_killed(planted, crash_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    later = wall_clock_ms() + HOUR_MS + 60_000
    rerun = plan_reconcile(
        t.store, objects(t), ReconcileScope(""), ReconcileGrace(later, DAY_MS, HOUR_MS)
    )
    apply_reconcile(rerun, t.store, t.rsm, objects(t), actor=ACTOR, now_ms=later)

    assert bucket_keys(t) == expected_keys
    for segment_id in (planted.stale_copy, planted.stale_delete):
        assert t.store.segment(segment_id).state == S.DELETE_SEGMENT_FINISHED
    left = reconcile(apply=False, grace_hours=None, settings=t.settings)
    assert {(f["kind"], f["key"]) for f in left["findings"]} == {
        (K.ORPHAN_OBJECT.value, planted.fresh_orphan),
        (K.MISSING_OBJECT.value, planted.missing_key),
        (K.SIZE_MISMATCH.value, planted.truncated_key),
    }
