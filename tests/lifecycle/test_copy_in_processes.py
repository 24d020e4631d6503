"""``tierflow copy`` rewriting on several processes: the same end state as one process, and a
worker process killed mid-batch (a real SIGKILL) fails only its segments, which the rerun
copies; nothing is lost or left behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.copy_end_state import assert_complete_and_clean
from tests.support.tiered import LAYOUTS, Tiered, build_tiered
from tierflow.faults import ENV_CRASH_AT


def copy(t: Tiered, *extra: str, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **t.settings.as_env()}
    env.pop(ENV_CRASH_AT, None)
    if crash_at:
        env[ENV_CRASH_AT] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", "copy", "--topic", "orders", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_two_processes_copy_what_one_does(tmp_path: Path, layout: str) -> None:
    t = build_tiered(tmp_path, layout=layout)
    done = copy(t, "--workers", "2")
    assert done.returncode == 0, done.stderr + done.stdout
    assert_complete_and_clean(t)


def test_a_killed_worker_fails_its_segments_and_the_rerun_copies_them(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    # The first segment a worker process takes kills that process; the pool breaks, so every
    # segment not yet back fails, is removed by finalize, and its partition is named.
    crashed = copy(t, "--workers", "2", crash_at="copy.rewrite_worker")
    assert crashed.returncode == 1, crashed.stderr + crashed.stdout
    assert "the process rewriting it died" in crashed.stderr
    assert "failed: orders-" in crashed.stdout.splitlines()[-1]
    rerun = copy(t, "--workers", "2")
    assert rerun.returncode == 0, rerun.stderr + rerun.stdout
    assert_complete_and_clean(t)


@pytest.mark.parametrize(
    "kill_point",
    [
        # A worker process killed in the middle of its pass over a segment's batches.
        "copy.mid_pass",
        # The parent killed once a batch's uploads are back, before any store write for them.
        "copy.after_upload",
    ],
)
def test_a_run_killed_mid_pass_or_before_its_store_writes_resumes(
    tmp_path: Path, kill_point: str
) -> None:
    t = build_tiered(tmp_path)
    crashed = copy(t, "--workers", "2", crash_at=kill_point)
    assert crashed.returncode != 0, crashed.stderr + crashed.stdout
    rerun = copy(t, "--workers", "2")
    assert rerun.returncode == 0, rerun.stderr + rerun.stdout
    assert_complete_and_clean(t)
