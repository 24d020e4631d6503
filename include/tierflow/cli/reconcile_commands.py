"""``tierflow reconcile``: compare the bucket with the metadata store, by hand.

The same plan and fixes as the weekly remote_reconcile DAG. Exit status: 0 when nothing is
wrong (or everything found was fixed), 1 when anomalies were found in a dry run or remain
after ``--apply``, 2 on errors (a fix failed, or the store or bucket could not be read).
"""

from __future__ import annotations

import argparse
import json
import re

from rich import box
from rich.console import Console, JustifyMethod
from rich.markup import escape
from rich.table import Table

from tierflow.cli.common import CommandError
from tierflow.cli.console import stdout_console
from tierflow.cli.progress import work_progress
from tierflow.cli.spec import Command, add_commands, arg, flag
from tierflow.config import InvalidSettingError, Settings
from tierflow.kafka.cluster_metadata import ClusterMetadataError
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
EXIT_CLEAN, EXIT_ANOMALIES, EXIT_ERRORS = 0, 1, 2

_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^(?P<amount>\d+(?:\.\d+)?)(?P<unit>[smhd])$")

DESCRIPTION = """\
Compare the bucket with the metadata store and report what does not match:

  orphan-object     a key under TIERFLOW_STORAGE_PREFIX that no live segment names (also
                    objects left by deleted segments, and keys outside every registered
                    partition); or a file under the Iceberg warehouse (iceberg/) that no
                    snapshot of its table, nor its metadata log, references
  stale-copy        COPY_SEGMENT_STARTED, no copy lease held, older than
                    TIERFLOW_STALE_COPY_GRACE_S: an abandoned copy
  stale-delete      DELETE_SEGMENT_STARTED older than the same grace: an interrupted delete
  missing-object    a COPY_SEGMENT_FINISHED segment's object is gone
  size-mismatch     ... or has another size than recorded
  warehouse-unchecked  the Iceberg catalog or one of its tables cannot be read: nothing
                    under iceberg/ is judged or deleted

Diskless WAL objects (<prefix>diskless/wal/<uuid>) are left to the diskless GC.

Nothing changes unless --apply is given (the default is a dry run). With --apply, orphan
objects last written longer ago than the grace period (--grace, else
TIERFLOW_RECONCILE_GRACE_S, 24h) are deleted, stale deletes are finished and stale copies
deleted through DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED; each is re-checked just
before it is done. Missing or wrong-sized objects are data loss: they are only reported, and
never "fixed" by dropping their metadata, so readers keep failing loudly rather than silently
skipping offsets. Partitions of deleted topics still being removed are left to the remover.

Exit status: 0 clean, 1 anomalies found (dry run) or remaining (--apply), 2 errors.
"""


def parse_duration(text: str) -> int:
    """``24h``, ``30m``, ``90s``, ``7d`` or ``0``, in milliseconds. A bare number other than 0
    is refused: hours or seconds would be a guess."""
    text = text.strip()
    if text == "0":
        return 0
    found = _DURATION.match(text)
    if not found:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: give a number with a unit, e.g. 24h, 30m, 90s, 7d, or 0"
        )
    return round(float(found["amount"]) * _UNITS_MS[found["unit"]])


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


def exit_status(plan: ReconcilePlan, report: ReconcileReport | None) -> int:
    if report is not None:
        if report.failed:
            return EXIT_ERRORS
        return EXIT_ANOMALIES if report.remaining else EXIT_CLEAN
    return EXIT_ANOMALIES if plan.anomalies else EXIT_CLEAN


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


RECONCILE = Command(
    "reconcile",
    reconcile_command,
    help="compare the bucket with the store: orphans, stale rows, missing objects",
    description=DESCRIPTION,
    raw=True,
    args=(
        flag("--apply", "fix what is safe to fix (default: a dry run that changes nothing)"),
        arg(
            "--grace",
            type=parse_duration,
            metavar="DURATION",
            help="delete orphan objects only when last written longer ago than this, e.g. 24h, "
            "30m, 90s, 7d, or 0 [TIERFLOW_RECONCILE_GRACE_S, 24h]",
        ),
        arg("--topic", help="only this topic (repeatable) [all]", action="append"),
        flag("--json", "print the findings as JSON"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``reconcile`` to the ``tierflow`` command."""
    add_commands(sub, (RECONCILE,))
