"""``tierflow status``: the table and --json print the same figures as compute_metrics."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

import pytest

from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered
from tierflow.cli.status_commands import register
from tierflow.cli.status_tables import COLUMNS
from tierflow.metrics import compute_metrics
from tierflow.units import human_bytes


@pytest.fixture
def run_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str]]:
    def run(t: Tiered, *argv: str) -> tuple[int, str]:
        use_settings(monkeypatch, t.settings)
        parser = argparse.ArgumentParser()
        register(parser.add_subparsers())
        args = parser.parse_args(["status", *argv])
        capsys.readouterr()
        status = args.func(args)
        return status, capsys.readouterr().out

    return run


def _json_cells(p: dict) -> list[str]:
    """A --json partition in the table's column order."""

    def pair(size: int | None, count: int | None) -> str:
        return "-" if size is None else f"{human_bytes(size)} / {count}"

    remote = p["remote"]
    return [
        p["topic"],
        str(p["partition"]),
        str(p["broker"]),
        pair(p["local_bytes"], p["local_segments"]),
        *(
            pair(remote[state]["bytes"], remote[state]["segments"])
            for state in ("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED")
        ),
        pair(p["remote_copy_lag_bytes"], p["remote_copy_lag_segments"]),
        pair(p["remote_delete_lag_bytes"], p["remote_delete_lag_segments"]),
        human_bytes(p["remote_log_size_bytes"]),
        str(p["remote_log_metadata_count"]),
        str(p["highest_remote_offset"]),
        str(p["log_start_offset"]),
        str(p["local_log_start_offset"]),
        f"{p['tiered_state']}/{p['tiered_epoch']}",
    ]


@pytest.mark.parametrize("topic", ["orders", "payments"])
def test_json_matches_compute_metrics(partly: Tiered, run_status, topic: str) -> None:
    status, out = run_status(partly, "--json", "--topic", topic)
    assert status == 0
    report = json.loads(out)
    expected = compute_metrics(partly.store, partly.settings.log_dirs, topic=topic)
    assert report["partitions"] == [
        {**m.as_dict(), "broker": 0, "leaderless": False} for m in expected
    ]
    assert [t["topic"] for t in report["topics"]] == [topic]


def test_without_a_topic_partitions_are_summed_per_topic(partly: Tiered, run_status) -> None:
    report = json.loads(run_status(partly, "--json")[1])
    assert report["partitions"] == []
    assert [t["topic"] for t in report["topics"]] == ["orders", "payments"]
    assert report["partition_page"]["total"] == 3 and not report["partition_page"]["listed"]


def test_the_table_shows_the_json_figures(partly: Tiered, run_status) -> None:
    _, out = run_status(partly, "--json", "--topic", "orders")
    partitions = json.loads(out)["partitions"]
    status, table = run_status(partly, "--topic", "orders")
    assert status == 0
    lines = table.splitlines()
    header = next(i for i, line in enumerate(lines) if "highest remote" in line)
    rows = [
        line.split()
        for line in lines[header + 1 :]
        if line.split()[:1] in (["orders"], ["payments"])
    ]
    partition_rows = rows[: len(partitions)]
    # Cells hold spaces (``224 KiB / 4``): compare the rows' words.
    assert partition_rows == [" ".join(_json_cells(p)).split() for p in partitions]
    assert len(COLUMNS) == len(_json_cells(partitions[0]))
    assert "topics (sum of partitions)" in table


def test_filters_by_topic_and_partition(partly: Tiered, run_status) -> None:
    _, out = run_status(partly, "--json", "--topic", "orders", "--partition", "1")
    report = json.loads(out)
    assert [(p["topic"], p["partition"]) for p in report["partitions"]] == [("orders", 1)]
    assert report["topics"][0]["partitions"] == 1


def test_an_unknown_topic_is_an_error(partly: Tiered, run_status) -> None:
    from tierflow.cli.commands import CommandError

    with pytest.raises(CommandError, match="nope"):
        run_status(partly, "--topic", "nope")
