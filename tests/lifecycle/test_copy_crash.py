"""Kill the copy with a real SIGKILL at step boundaries, rerun it as a task clear would, and
check that the end state is exactly that of an uninterrupted run.

The copy runs as ``tierflow copy`` in a subprocess; TIERFLOW_CRASH_AT makes the process kill
itself at the named injection point (tierflow.faults), which is what an OOM kill or a lost
worker does. The rerun uses the same lease owner, like a cleared Airflow task.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.copy_end_state import assert_complete_and_clean
from tests.support.tiered import LAYOUTS, Tiered, build_tiered

pytestmark = pytest.mark.slow

OWNER = "airflow:segment_copy.copy_partition:orders"


def run_copy(t: Tiered, crash_at: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, **t.settings.as_env()}
    env.pop("TIERFLOW_CRASH_AT", None)
    if crash_at:
        env["TIERFLOW_CRASH_AT"] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", "copy", "--topic", "orders", "--owner", OWNER]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


KILL_POINTS = [
    "copy.after_started",  # STARTED recorded, nothing uploaded
    "copy.mid_pass",  # the first chunk checked and handed to the upload, the pass not done
    "rsm.after_put#1",  # the .log uploaded, indexes not
    "rsm.after_put#2",  # plain: the offset index is up; chunked: .log and .indexes, no manifest
    "copy.after_upload",  # everything uploaded, not verified
    "copy.before_finished",  # verified, FINISHED not yet recorded
    "copy.after_finished",  # FINISHED recorded, run not done
    "copy.after_started#3",  # in the middle of the third segment
]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("kill_point", KILL_POINTS)
def test_killed_copy_resumes_to_the_uninterrupted_end_state(
    tmp_path: Path, kill_point: str, layout: str
):
    t = build_tiered(tmp_path, layout=layout)
    crashed = run_copy(t, kill_point)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    rerun = run_copy(t, None)
    assert rerun.returncode == 0, rerun.stderr + rerun.stdout
    assert_complete_and_clean(t)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("second_kill", ["delete.after_started", "delete.after_storage_delete"])
def test_kill_during_the_cleanup_of_a_killed_copy(tmp_path: Path, second_kill: str, layout: str):
    t = build_tiered(tmp_path, layout=layout)
    assert run_copy(t, "copy.before_finished").returncode == -signal.SIGKILL
    # The rerun starts cleaning the abandoned attempt and is killed too.
    assert run_copy(t, second_kill).returncode == -signal.SIGKILL
    final = run_copy(t, None)
    assert final.returncode == 0, final.stderr + final.stdout
    assert "removed abandoned attempt" in final.stdout
    assert_complete_and_clean(t)


def test_uninterrupted_run_is_the_reference(tmp_path: Path):
    t = build_tiered(tmp_path)
    assert run_copy(t, None).returncode == 0
    assert_complete_and_clean(t)
