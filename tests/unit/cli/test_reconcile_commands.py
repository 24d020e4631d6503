"""``tierflow reconcile``: dry run by default, exit codes, --apply, --grace, --json, --topic.

The command is registered into a parser here the way ``tierflow.cli.build_parser`` does it, so
the test does not depend on the other commands being importable.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.reconcile.support import (
    DAY_MS,
    HOUR_MS,
    Planted,
    bucket_keys,
    build_planted,
    objects,
    recorded_work,
    tier_all,
)
from tests.retention.support import FailingDeletes
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli.commands import CommandError
from tierflow.cli.reconcile_commands import exit_status, parse_duration, register
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.reconcile import (
    ReconcileGrace,
    ReconcileScope,
    apply_reconcile,
    plan_reconcile,
)
from tierflow.units import human_bytes

Run = Callable[..., tuple[int, str]]


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    def run(t: Tiered, *argv: str) -> tuple[int, str]:
        use_settings(monkeypatch, t.settings)
        parser = argparse.ArgumentParser(prog="tierflow")
        register(parser.add_subparsers())
        args = parser.parse_args(["reconcile", *argv])
        capsys.readouterr()
        status = args.func(args)
        return status, capsys.readouterr().out

    return run


@pytest.fixture
def planted(tmp_path: Path) -> Planted:
    return build_planted(tmp_path)


def test_dry_run_reports_every_kind_and_exits_1(planted: Planted, run: Run) -> None:
    t = planted.t
    events, keys = len(t.store.events()), bucket_keys(t)

    status, out = run(t)

    assert status == 1
    for kind in ("orphan-object", "stale-copy", "stale-delete", "missing-object", "size-mismatch"):
        assert kind in out
    assert planted.missing_key in out and planted.foreign_orphan in out
    assert "Dry run: nothing changed; 6 finding(s) would be fixed with --apply" in out
    assert "the metadata is kept" in out
    assert (len(t.store.events()), bucket_keys(t)) == (events, keys)


def test_json_lists_the_findings(planted: Planted, run: Run) -> None:
    status, out = run(planted.t, "--json")
    summary = json.loads(out)
    assert status == 1
    assert summary["applied"] is False
    assert {(f["kind"], f["key"] or f["segment_id"]) for f in summary["findings"]} == (
        planted.expected_findings()
    )
    assert summary["data_loss"] == 2 and summary["actionable"] == 6


def test_apply_fixes_and_exits_1_while_data_loss_remains(planted: Planted, run: Run) -> None:
    t = planted.t
    status, out = run(t, "--apply")
    assert status == 1
    assert "Applied: 6 fixed, 3 remaining, 0 failed" in out
    assert not bucket_keys(t) & planted.old_orphans
    assert planted.fresh_orphan in bucket_keys(t)

    status, out = run(t, "--apply", "--grace", "0")
    assert status == 1  # the missing and the truncated object stay, reported
    assert planted.fresh_orphan not in bucket_keys(t)
    assert "Applied: 1 fixed, 2 remaining, 0 failed" in out


def test_a_clean_bucket_exits_0(tmp_path: Path, run: Run) -> None:
    t = build_tiered(tmp_path)
    tier_all(t, wall_clock_ms())
    status, out = run(t, "--apply", "--grace", "0")
    assert status == 0
    assert "clean: 3 partition(s)" in out


def test_topic_filter_and_unknown_topic(planted: Planted, run: Run) -> None:
    status, out = run(planted.t, "--topic", "payments", "--json")
    kinds = {f["kind"] for f in json.loads(out)["findings"]}
    assert (status, kinds) == (1, {"stale-copy"})
    with pytest.raises(CommandError, match="no-such-topic"):
        run(planted.t, "--topic", "no-such-topic")


def test_help_explains_the_dry_run_the_grace_and_missing_objects(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser(prog="tierflow")
    register(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["reconcile", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the default is a dry run" in text
    assert "TIERFLOW_RECONCILE_GRACE_S" in text and "grace period" in text
    assert 'never "fixed" by dropping their metadata' in text


@pytest.mark.parametrize(
    ("text", "ms"), [("0", 0), ("90s", 90_000), ("30m", 1_800_000), ("24h", 86_400_000)]
)
def test_durations(text: str, ms: int) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["24", "1w", "-1h", "h"])
def test_ambiguous_or_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="with a unit"):
        parse_duration(text)


def test_a_failed_fix_exits_2(planted: Planted) -> None:
    t = planted.t
    failing = FailingDeletes(objects(t), fail_if="left-behind")
    plan = plan_reconcile(
        t.store, failing, ReconcileScope(""), ReconcileGrace(wall_clock_ms(), DAY_MS, HOUR_MS)
    )
    report = apply_reconcile(plan, t.store, t.rsm, failing, actor="test", now_ms=wall_clock_ms())
    assert len(report.failed) == 1
    assert exit_status(plan, report) == 2
    assert exit_status(plan, None) == 1


def test_progress_goes_to_stderr_and_json_stays_quiet(
    planted: Planted, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    t = planted.t
    segments, size = recorded_work(t)
    size_text = human_bytes(size)
    use_settings(monkeypatch, t.settings)
    parser = argparse.ArgumentParser(prog="tierflow")
    register(parser.add_subparsers())

    args = parser.parse_args(["reconcile"])
    capsys.readouterr()
    assert args.func(args) == 1
    out, err = capsys.readouterr()
    # Off a terminal: plain lines on stderr, the last saying what was checked; the table and
    # its totals alone on stdout.
    lines = err.splitlines()
    assert all(line.startswith("reconcile: ") for line in lines)
    assert lines[-1].startswith(
        f"reconcile: done, {segments}/{segments} segments, {size_text} of {size_text} (100%)"
    )
    assert "reconcile findings" in out and "reconcile:" not in out

    args = parser.parse_args(["reconcile", "--json"])
    assert args.func(args) == 1
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)["data_loss"] == 2
