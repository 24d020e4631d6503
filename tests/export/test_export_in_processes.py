"""``tierflow export iceberg --workers 2`` writes its partitions on the engine's pool: each in a
child process (the crash trace's pids), the table holding each committed record once, as the
log dirs hold them. A worker SIGKILLed mid-batch fails the run on one line and commits
nothing; the same run id rerun commits once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.iceberg_rows import assert_holds_committed
from tests.support.tiered import Tiered
from tierflow.export.catalog import settings_target
from tierflow.export.table import topic_table
from tierflow.faults import ENV_CRASH_AT, ENV_CRASH_TRACE

pytestmark = [pytest.mark.slow]


def export(t: Tiered, run: str, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, **t.settings.as_env(), **env}
    for name in (ENV_CRASH_AT, ENV_CRASH_TRACE):
        if name not in env:
            full.pop(name, None)
    command = [sys.executable, "-m", "tierflow.cli", "export", "iceberg", "--run", run]
    command += ["--workers", "2"]
    return subprocess.run(command, env=full, capture_output=True, text=True, timeout=300)


def trace_pids(trace: Path, prefix: str) -> list[int]:
    lines = [line.split("\t") for line in trace.read_text().splitlines()]
    return [int(pid) for pid, point, _ in lines if point.startswith(prefix)]


def test_each_partition_is_written_in_a_worker_process(tiered: Tiered, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    done = export(tiered, "one", **{ENV_CRASH_TRACE: str(trace)})
    assert done.returncode == 0, done.stderr
    workers = trace_pids(trace, "export.worker#")
    parent = set(trace_pids(trace, "export.before_commit#"))
    assert len(workers) == 2 and len(set(workers)) == 2, "one partition in each process"
    assert len(parent) == 1 and not parent & set(workers)
    table = topic_table(settings_target(tiered.settings), "orders")
    assert_holds_committed(table, [tiered.log("orders", 0), tiered.log("orders", 1)])


def test_a_worker_killed_mid_batch_commits_nothing_and_the_rerun_commits_once(
    tiered: Tiered,
) -> None:
    killed = export(tiered, "two", **{ENV_CRASH_AT: "export.worker#1"})
    assert killed.returncode == 2, killed.stdout + killed.stderr  # one line on stderr
    assert "the process exporting it died" in killed.stderr, killed.stderr
    assert "Traceback" not in killed.stderr
    table = topic_table(settings_target(tiered.settings), "orders")
    assert table.snapshots() == [], "nothing committed"
    rerun = export(tiered, "two")
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    table = table.refresh()
    assert_holds_committed(table, [tiered.log("orders", 0), tiered.log("orders", 1)])
    assert len(table.snapshots()) == 1, "committed once"
