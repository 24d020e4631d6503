"""The copy of a compacted topic killed with a real SIGKILL at its step boundaries, while it
copies a slice (a segment the log cleaner merged across the remote boundary) and the whole
segment after it; the rerun ends as an uninterrupted run does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.compacted_copy import (
    CHANGELOG,
    finished_changelog_ranges,
    merge_across_the_boundary,
)
from tests.support.end_state import assert_histories_and_bucket_clean
from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

OWNER = "airflow:segment_copy.copy_partition:changelog"
KILL_POINTS = [
    "copy.after_started",  # the slice STARTED, nothing uploaded
    "rsm.after_put#1",  # the slice's .log uploaded, the rest not
    "copy.before_finished",  # verified, FINISHED not yet recorded
    "copy.after_started#2",  # the whole segment after the slice STARTED
]


def merged_across_the_boundary(tmp_path: Path) -> tuple[Tiered, list[int]]:
    """Segments 0-3 cleaned and copied; a second pass merged 2-4 and cleaned 5. With the
    segments' base offsets as generated."""
    t = build_tiered(
        tmp_path,
        layout="chunked-encrypted",
        topics=(CHANGELOG,),
        topic_configs={"changelog": {"cleanup_policy": "compact"}},
    )
    return t, merge_across_the_boundary(t)


def run_copy(t: Tiered, crash_at: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TIERFLOW_CRASH_AT"}
    env.update(t.settings.as_env())
    if crash_at:
        env["TIERFLOW_CRASH_AT"] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", "copy", "--topic", "changelog"]
    command += ["--owner", OWNER]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def assert_as_uninterrupted(t: Tiered, first: list[int]) -> None:
    expected = [(first[i], first[i + 1] - 1) for i in range(6)]
    assert finished_changelog_ranges(t) == expected
    topic = t.store.topic("changelog")
    rows = t.store.segments(topic.topic_id, 0)
    live = [r for r in rows if r.state != S.DELETE_SEGMENT_FINISHED]
    assert [r.state for r in live] == [S.COPY_SEGMENT_FINISHED] * 6, "nothing half-done"
    assert_histories_and_bucket_clean(t, rows, live)
    checks = verify_partition(t.log("changelog", 0), topic, t.store, t.rsm)
    assert [c.identical for c in checks][-2:] == [True, True], checks


@pytest.mark.parametrize("kill_point", KILL_POINTS)
def test_a_killed_compacted_copy_resumes_to_the_uninterrupted_end_state(
    tmp_path: Path, kill_point: str
) -> None:
    t, first = merged_across_the_boundary(tmp_path)
    crashed = run_copy(t, kill_point)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    rerun = run_copy(t, None)
    assert rerun.returncode == 0, rerun.stderr + rerun.stdout
    assert_as_uninterrupted(t, first)
