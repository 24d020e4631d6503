"""``tierflow status``: its tables and ``--json`` print one snapshot, the page's."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import pytest

from tests.operator_view.conftest import ViewData
from tests.support.settings_env import use_settings
from tierflow.cli.status_commands import register
from tierflow.operator_view import snapshot as snapshot_module
from tierflow.operator_view.formatting import utc
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.snapshot import build_snapshot
from tierflow.tasks.attribution import actor_base

ARGS = ("--stuck-after", "60", "--events", "7", "--history")


@pytest.fixture
def run_status(
    view_data: ViewData, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., str]:
    use_settings(monkeypatch, view_data.t.settings)
    monkeypatch.setattr(snapshot_module, "wall_clock_ms", lambda: view_data.now_ms)

    def run(*argv: str) -> str:
        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        args = parser.parse_args(["status", *argv])
        capsys.readouterr()
        assert args.func(args) == 0
        return capsys.readouterr().out

    return run


def test_json_is_the_pages_snapshot(view_data: ViewData, run_status) -> None:
    d = view_data
    report = json.loads(run_status("--json", *ARGS))
    options = ViewOptions(stuck_after_s=60, events=7, history=True)
    expected = build_snapshot(d.t.store, d.t.settings, now_ms=d.now_ms, options=options)
    assert report == json.loads(json.dumps(expected.as_dict()))
    assert len(report["stuck"]) == 3 and len(report["events"]) == 7
    assert "history" not in json.loads(run_status("--json"))


@pytest.mark.parametrize("view", [(), ("--topic", "orders")])
def test_every_table_shows_the_json_figures(run_status, view: tuple[str, ...]) -> None:
    report = json.loads(run_status("--json", *view, *ARGS))
    table = run_status(*view, *ARGS)
    rows = _rows(table)
    assert bool(report["partitions"]) == bool(view)
    for p in report["partitions"]:
        local = f"{p['local_bytes']}/{p['local_segments']}"
        assert [p["topic"], str(p["partition"]), str(p["broker"]), local] in [r[:4] for r in rows]
    assert bool(report["retention"]["partitions"]) == bool(view)

    for p in report["retention"]["partitions"]:
        remote = f"{p['remote_bytes']}/{p['remote_segments']}"
        local = f"{p['local_bytes']}/{p['local_segments']}"
        assert [p["topic"], str(p["partition"]), remote, local] in [r[:4] for r in rows]
    for s in report["stuck"]:
        (line,) = [x for x in table.splitlines() if x.split()[2:4] == [s["segment_id"], s["state"]]]
        ti = s["task_instance"]
        assert s["state"] in line and str(s["size_bytes"]) in line
        assert str(s["age_ms"] // 1000) in line and utc(s["since_ms"]) in line
        assert f"{ti['dag_id']} {ti['run_id']} {ti['task_id']}[{ti['map_index']}]" in line
    for e in report["events"]:
        line = next(x for x in table.splitlines() if x.split()[:1] == [str(e["id"])])
        assert utc(e["time_ms"], millis=True) in line and e["to_state"] in line
        assert actor_base(e["actor"]) in line.split()
        if (ti := e["task_instance"]) is not None:
            assert f"{ti['dag_id']} {ti['run_id']} {ti['task_id']}[{ti['map_index']}]" in line
    history = [r for r in rows if len(r) == 5 and r[2] == "UTC"]  # date, time, UTC, two sizes
    assert history == [
        [
            *utc(h["time_ms"], millis=True).split(),
            str(h["remote_log_size_bytes"]),
            str(h["remote_copy_lag_bytes"]),
        ]
        for h in report["history"]
    ]
    for t in report["topics"]:
        line = next(
            x for x in table.splitlines() if x.split()[:2] == [t["topic"], str(t["partitions"])]
        )
        assert f"{t['tiered_state']}/{t['tiered_epoch']}" in line
        assert f"{t['retention_ms']}/{t['retention_bytes']}" in line
        assert f"{t['effective_local_retention_ms']}/{t['effective_local_retention_bytes']}" in line
    assert f"as of {utc(report['retention']['as_of_ms'])}" in table


def _rows(table: str) -> list[list[str]]:
    return [line.split() for line in table.splitlines() if line.strip()]
