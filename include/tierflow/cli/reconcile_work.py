"""The work behind ``tierflow reconcile`` (its options are in ``reconcile_commands``): imported
when it runs."""

from __future__ import annotations

import argparse
import json

from rich import box
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from tierflow.cli.common import CommandError
from tierflow.cli.console import stdout_console
from tierflow.cli.progress import work_progress
from tierflow.cli.reconcile_commands import exit_status
from tierflow.config import InvalidSettingError, Settings
from tierflow.kafka.errors import ClusterMetadataError
from tierflow.lifecycle.reconcile import (
    Finding,
    FindingKind,
    Outcome,
    ReconcilePlan,
    ReconcileReport,
    Result,
    reconcile_summary,
    why_kept,
)
from tierflow.metadata.errors import UnknownTopicError
from tierflow.rsm import RemoteStorageError
from tierflow.storage.factory import UnsupportedStorageURLError
from tierflow.tasks.reconcile import run_reconcile
from tierflow.units import human_bytes, human_duration

ACTOR = "cli:reconcile"


def reconcile_command(args: argparse.Namespace) -> int:
    try:
        settings = Settings.from_env()
        plan, report = _run(settings, args)
    except (UnknownTopicError, InvalidSettingError, UnsupportedStorageURLError) as exc:
        raise CommandError(str(exc)) from exc
    except RemoteStorageError as exc:
        raise CommandError(f"reading the bucket failed: {exc}") from exc
    except ClusterMetadataError as exc:
        raise CommandError(f"{exc}; nothing was reconciled") from exc
    if args.json:
        print(json.dumps(reconcile_summary(plan, report), indent=2))
    else:
        _print(plan, report)
    return exit_status(plan, report)


def _run(
    settings: Settings, args: argparse.Namespace
) -> tuple[ReconcilePlan, ReconcileReport | None]:
    grace_ms = settings.reconcile_grace_s * 1000 if args.grace is None else args.grace
    # On stderr, so a --json or table on stdout stays as it was; --json asks for quiet too.
    with work_progress("reconcile", enabled=not args.json) as progress:
        return run_reconcile(
            settings,
            apply=args.apply,
            object_grace_ms=grace_ms,
            actor=ACTOR,
            topics=args.topic,
            progress=progress,
        )


def _print(plan: ReconcilePlan, report: ReconcileReport | None) -> None:
    out = _out()
    if not plan.findings:
        out.print(
            f"clean: {plan.partitions_checked} partition(s), {plan.objects_listed} object(s) "
            "checked, nothing to reconcile"
        )
        return
    rows = (
        [(o.finding, o) for o in report.outcomes] if report else [(f, None) for f in plan.findings]
    )
    out.print(findings_table(rows))
    for finding, _outcome in rows:
        if finding.data_loss:
            out.print(f"[red]{escape(finding.message)}[/red]")
        elif finding.kind is FindingKind.WAREHOUSE_UNCHECKED:
            out.print(f"[yellow]{escape(finding.message)}[/yellow]")
    out.print(_totals(plan, report))


def findings_table(rows: list[tuple[Finding, Outcome | None]]) -> Table:
    """One row per finding; the last column says what --apply would do, or what it did."""
    table = Table(title="reconcile findings", box=box.SIMPLE_HEAD, title_justify="left")
    for column in ("kind", "partition", "key / segment", "size", "age", "action", "outcome"):
        justify: JustifyMethod = "right" if column in ("size", "age") else "left"
        table.add_column(column, justify=justify, no_wrap=column != "outcome")
    for finding, outcome in rows:
        table.add_row(
            finding.kind.value,
            finding.where,
            escape(finding.subject),
            "-" if finding.size is None else human_bytes(finding.size),
            "-" if finding.age_ms is None else human_duration(finding.age_ms),
            finding.action.value,
            _outcome_text(finding, outcome),
        )
    return table


def _outcome_text(finding: Finding, outcome: Outcome | None) -> str:
    if outcome is None:  # a dry run: say what --apply would do
        if finding.actionable:
            return "would fix with --apply"
        outcome = Outcome(finding, Result.KEPT, why_kept(finding))
    detail = f": {escape(outcome.detail)}" if outcome.detail else ""
    text = f"{outcome.result.value}{detail}"
    return f"[red]{text}[/red]" if finding.data_loss or outcome.result is Result.FAILED else text


def _totals(plan: ReconcilePlan, report: ReconcileReport | None) -> str:
    counts = ", ".join(f"{kind} {n}" for kind, n in plan.counts().items() if n)
    head = (
        f"{plan.partitions_checked} partition(s), {plan.objects_listed} object(s) checked: "
        f"{counts}."
    )
    if report is None:
        return (
            f"{head} Dry run: nothing changed; {len(plan.actionable)} finding(s) would be "
            "fixed with --apply."
        )
    return (
        f"{head} Applied: {len(report.fixed)} fixed, {len(report.remaining)} remaining, "
        f"{len(report.failed)} failed."
    )


def _out() -> Console:
    # The whole table on one line per row off a terminal (cli.console).
    return stdout_console(soft_wrap=True, highlight=False)
