"""``tierflow export iceberg`` killed (a real SIGKILL) before and after its commit and rerun
with the same run id, with new segments tiered between two runs: the table ends holding each
committed record exactly once, as an uninterrupted export would, and ``export status`` says
how far behind it is."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.iceberg_rows import assert_holds_committed
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli import main
from tierflow.export.catalog import settings_target
from tierflow.export.table import topic_table
from tierflow.faults import ENV_CRASH_AT
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.page import render_page
from tierflow.operator_view.snapshot import snapshot_from_settings

pytestmark = [pytest.mark.slow]


def export(t: Tiered, *args: str, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **t.settings.as_env()}
    env.pop(ENV_CRASH_AT, None)
    if crash_at:
        env[ENV_CRASH_AT] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", "export", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def exported(t: Tiered, run: str, crash_at: str) -> None:
    """A run killed at ``crash_at``, then rerun with its id to the end."""
    killed = export(t, "iceberg", "--run", run, crash_at=crash_at)
    assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
    done = export(t, "iceberg", "--run", run, "--json")
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)["topics"]
    assert report["committed"] != (crash_at == "export.after_commit"), report
    assert report["committed_before"] == (crash_at == "export.after_commit"), report


@pytest.fixture
def tiered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tiered:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    use_settings(monkeypatch, t.settings)
    assert main(["topics", "register", "orders", "--config", "tierflow.iceberg.export=true"]) == 0
    return t


def test_killed_exports_rerun_to_exactly_once(tiered: Tiered) -> None:
    t = tiered
    assert main(["copy", "--owner", "test", "--topic", "orders", "--partition", "0"]) == 0
    dry = export(t, "iceberg", "--dry-run", "--json")
    assert [p["partition"] for p in json.loads(dry.stdout)["partitions"]] == [0]
    exported(t, "first", "export.before_commit")
    assert main(["copy", "--owner", "test", "--topic", "orders"]) == 0  # orders-1 tiered now
    exported(t, "second", "export.after_commit")
    table = topic_table(settings_target(t.settings), "orders")
    ends = assert_holds_committed(table, [t.log("orders", 0), t.log("orders", 1)])
    assert len(table.snapshots()) == 2, "one commit per run"
    data = Path(table.location().removeprefix("file://")) / "data"
    assert sorted(p.name for p in data.iterdir()) == ["run-first", "run-second"]
    status = export(t, "status", "--json")
    lags = {p["partition"]: p for p in json.loads(status.stdout)["partitions"]}
    assert {p: lag["exported_end_offset"] for p, lag in lags.items()} == ends
    topic_id = t.store.topic("orders").topic_id
    for partition, end in ends.items():  # what remote retention waits on
        assert t.store.partition(topic_id, partition).iceberg_exported_offset == end
    # tierflow status and the Tiered storage page show the same lag, from the store.
    snapshot = snapshot_from_settings(t.settings, ViewOptions(history=False))
    assert [lag.as_dict() for lag in snapshot.export_lag] == list(lags.values())
    page = render_page(snapshot, options=ViewOptions(), topic_names=["orders"], ui_root="/")
    assert "Iceberg export lag" in page and 'id="export-lag"' in page
