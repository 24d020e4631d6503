"""``tierflow status``: its tables and ``--json`` print one snapshot, the page's."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable

import pytest

from tests.operator_view.conftest import ViewData
from tests.support.settings_env import use_settings
from tierflow.cli.status_commands import register
from tierflow.operator_view import snapshot as snapshot_module
from tierflow.operator_view.formatting import retention_bytes, retention_ms
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.snapshot import build_snapshot
from tierflow.tasks.attribution import actor_base
from tierflow.units import human_bytes, human_duration, iso_utc

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


@pytest.mark.parametrize("view", [(), ("--topic", "orders")], ids=["all-topics", "one-topic"])
def test_every_table_shows_the_json_figures(run_status, view: tuple[str, ...]) -> None:
    report = json.loads(run_status("--json", *view, *ARGS))
    table = run_status(*view, *ARGS)
    assert bool(report["partitions"]) == bool(view)
    for p in report["partitions"]:
        local = _pair(p["local_bytes"], p["local_segments"])
        assert _row(table, p["topic"], str(p["partition"]), str(p["broker"]), local)
    assert bool(report["retention"]["partitions"]) == bool(view)
    for p in report["retention"]["partitions"]:
        remote = _pair(p["remote_bytes"], p["remote_segments"])
        local = _pair(p["local_bytes"], p["local_segments"])
        assert _row(table, p["topic"], str(p["partition"]), remote, local)
    for s in report["stuck"]:
        ti = s["task_instance"]
        assert _line(
            table,
            s["segment_id"],
            s["state"],
            human_bytes(s["size_bytes"]),
            iso_utc(s["since_ms"]),
            human_duration(s["age_ms"]),
            f"{ti['dag_id']} {ti['run_id']} {ti['task_id']}[{ti['map_index']}]",
        )
    for e in report["events"]:
        line = _line(table, str(e["id"]), iso_utc(e["time_ms"]), e["to_state"])
        assert actor_base(e["actor"]) in line.split()
        if (ti := e["task_instance"]) is not None:
            assert f"{ti['dag_id']} {ti['run_id']} {ti['task_id']}[{ti['map_index']}]" in line
    history = [c for c in map(_cells, table.splitlines()) if len(c) == 3 and c[0][:2] == "20"]
    assert history == [
        [
            iso_utc(h["time_ms"]),
            human_bytes(h["remote_log_size_bytes"]),
            human_bytes(h["remote_copy_lag_bytes"]),
        ]
        for h in report["history"]
    ]
    for t in report["topics"]:
        assert _line(
            table,
            t["topic"],
            f"{t['tiered_state']}/{t['tiered_epoch']}",
            f"{retention_ms(t['retention_ms'])} / {retention_bytes(t['retention_bytes'])}",
        )
    assert f"as of {iso_utc(report['retention']['as_of_ms'])}" in table


def _pair(size: int, count: int) -> str:
    return f"{human_bytes(size)} / {count}"


def _cells(line: str) -> list[str]:
    """A table row's cells: rich puts two spaces or more between them, at most one inside."""
    return re.split(r"\s{2,}", line.strip())


def _row(table: str, *cells: str) -> list[str]:
    """The one row of the table that starts with these cells."""
    found = [c for c in map(_cells, table.splitlines()) if c[: len(cells)] == list(cells)]
    assert len(found) == 1, (cells, found)
    return found[0]


def _line(table: str, *cells: str) -> str:
    """The one line of the table that holds every one of these cells, in order."""
    found = [line for line in table.splitlines() if _in_order(_cells(line), cells)]
    assert len(found) == 1, (cells, found)
    return found[0]


def _in_order(row: list[str], cells: tuple[str, ...]) -> bool:
    rest = iter(row)
    return all(any(cell == have for have in rest) for cell in cells)
