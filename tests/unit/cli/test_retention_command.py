"""``tierflow retention``: the nightly retention_expiry run from a shell, no server.

Tiered data from a generated log dir, a SQLite store and a local bucket, as the retention tests
build it; ``orders`` gets a retention.ms that expires its two oldest remote segments per
partition. The command is registered into a parser the way ``tierflow.cli.build_parser`` does.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.retention.support import HOUR_MS, configure, copy_all, objects_of, rows
from tests.support.settings_env import use_settings
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.cli import main
from tierflow.cli.common import CommandError, parse_now
from tierflow.cli.retention_commands import register
from tierflow.metadata.states import RemoteLogSegmentState as S

NOW = datetime.fromtimestamp(NOW_MS / 1000, tz=UTC).isoformat()
Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def expiring(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path)
    copy_all(t)
    configure(t, "orders", retention_ms=30 * HOUR_MS)
    return t


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    def run(t: Tiered, *argv: str) -> tuple[int, str, str]:
        use_settings(monkeypatch, t.settings)
        parser = argparse.ArgumentParser(prog="tierflow")
        register(parser.add_subparsers())
        args = parser.parse_args(["retention", "--now", NOW, *argv])
        capsys.readouterr()
        status = args.func(args)
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return run


def planned_ids(report: dict) -> set[str]:
    return {d["segment_id"] for p in report["plan"]["partitions"] for d in p["remote"]}


def expired(t: Tiered) -> list[str]:
    """The segments retention.ms expires as of NOW: the two oldest of each orders partition."""
    return [r.segment_id for p in (0, 1) for r in rows(t, "orders", p, S.COPY_SEGMENT_FINISHED)[:2]]


def test_dry_run_prints_the_plan_and_deletes_nothing(expiring: Tiered, run: Run) -> None:
    t = expiring
    before = {r.segment_id: r.state for p in (0, 1) for r in rows(t, "orders", p)}
    keys = [k for s in expired(t) for k in objects_of(t, s)]

    status, out, err = run(t, "--dry-run")

    assert status == 0 and err == ""
    assert "retention plan" in out and "dry run" in out
    assert "orders-0" in out and "orders-1" in out and "retention.ms" in out
    assert "would delete: 4 remote segments" in out
    assert {r.segment_id: r.state for p in (0, 1) for r in rows(t, "orders", p)} == before
    assert keys and all(k.is_file() for k in keys)


def test_run_deletes_exactly_the_planned_segments(expiring: Tiered, run: Run) -> None:
    t = expiring
    expected = expired(t)
    keys = [k for s in expected for k in objects_of(t, s)]

    status, out, err = run(t, "--json")

    report = json.loads(out)
    assert status == 0 and err == ""
    assert planned_ids(report) == set(expected)
    gone = {r.segment_id for p in (0, 1) for r in rows(t, "orders", p, S.DELETE_SEGMENT_FINISHED)}
    assert gone == set(expected)
    assert keys and not any(k.exists() for k in keys)
    assert report["result"]["totals"]["remote_segments"] == 4


def test_json_schema(expiring: Tiered, run: Run) -> None:
    status, out, _err = run(expiring, "--json", "--dry-run")

    report = json.loads(out)
    assert status == 0
    assert set(report) == {"now_ms", "dry_run", "plan", "result"}
    assert report["now_ms"] == NOW_MS and report["dry_run"] is True
    figures = {"remote_segments", "remote_bytes", "local_segments", "local_bytes"}
    assert set(report["plan"]["totals"]) == {"partitions", *figures}
    partition = report["plan"]["partitions"][0]
    assert set(partition) == {
        "topic",
        "partition",
        "new_log_start_offset",
        "new_local_log_start_offset",
        "remote",
        "local",
    }
    assert set(partition["remote"][0]) == {
        "segment_id",
        "start_offset",
        "end_offset",
        "size_bytes",
        "reason",
    }
    assert set(partition["local"][0]) == {"base_offset", "next_offset", "size_bytes", "reason"}
    assert set(report["result"]) == {"dry_run", "topics", "totals", "local_files_deleted", "failed"}
    assert report["result"]["totals"] == {
        k: v for k, v in report["plan"]["totals"].items() if k != "partitions"
    }


def test_a_failed_partition_is_named_and_the_others_go_ahead(
    expiring: Tiered, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tierflow.tasks import retention

    real = retention.execute_remote_retention

    def failing(plan, *args, **kwargs):  # type: ignore[no-untyped-def]
        if plan.partition == 1:
            raise OSError("bucket unreachable")
        return real(plan, *args, **kwargs)

    monkeypatch.setattr(retention, "execute_remote_retention", failing)
    status, out, err = run(expiring)

    assert status == 1
    assert err.count("\n") == 1 and "orders-1 (OSError: bucket unreachable)" in err
    assert "deleted: 2 remote segments" in out


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01T00:00:00", ""])
def test_now_refuses_what_is_not_an_instant(text: str) -> None:
    with pytest.raises(CommandError, match=f"--now {text!r}"):
        parse_now(text)


def test_now_without_offset_is_utc() -> None:
    assert parse_now("2026-05-01T02:00:00") == parse_now("2026-05-01T02:00:00+00:00")
    assert parse_now("2026-05-01T04:00:00+02:00") == parse_now("2026-05-01T02:00:00Z")


def test_bad_now_is_one_line_from_the_tierflow_command(
    expiring: Tiered, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_settings(monkeypatch, expiring.settings)

    status = main(["retention", "--now", "soon"])

    err = capsys.readouterr().err
    assert status == 2
    assert (
        err == "tierflow: error: --now 'soon': not an ISO-8601 instant, e.g. 2026-05-01T02:00:00Z\n"
    )
