"""The work behind ``tierflow scrub`` (its options are in ``copy_commands``): imported when it
runs."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from tierflow.cli.common import cli_actor
from tierflow.cli.console import stdout_console
from tierflow.cli.shared import leader_partition_logs
from tierflow.config import Settings
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.scrub.repair import Repair, RepairRun, repair_findings
from tierflow.lifecycle.scrub.run import ScrubReport, ScrubRun, scrub
from tierflow.runtime import open_storage, open_store
from tierflow.units import counted, human_bytes

EXIT_PASSED, EXIT_FOUND = 0, 1
console = stdout_console(soft_wrap=True, highlight=False)


def scrub_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    if args.repair or args.apply:
        return _repair(settings, args)
    budget = args.budget_bytes or settings.scrub_budget_bytes
    run = ScrubRun(budget_bytes=budget, actor=cli_actor(), clock_ms=wall_clock_ms)
    report = scrub(open_store(settings), open_storage(settings), run)
    if args.json:
        print(json.dumps(_as_json(report), indent=2))
    else:
        console.print(_summary(report), highlight=False)
    for found in report.findings:
        print(f"tierflow: scrub: {found.said()}", file=sys.stderr)
    return EXIT_FOUND if report.findings else EXIT_PASSED


def _summary(report: ScrubReport) -> str:
    checked = counted(len(report.segments), "segment")
    read = f"{human_bytes(report.checked_bytes)} of a {human_bytes(report.budget_bytes)} budget"
    found = counted(len(report.findings), "finding")
    return f"scrubbed {checked} ({read}): {found}"


def _as_json(report: ScrubReport) -> dict:
    return {
        "budget_bytes": report.budget_bytes,
        "checked_bytes": report.checked_bytes,
        "segments": [asdict(s) for s in report.segments],
        "findings": len(report.findings),
    }


def _repair(settings: Settings, args: argparse.Namespace) -> int:
    """The open findings repaired (``--apply``) or what would be done; exit 1 while any stays."""
    logs = {(log_.topic, log_.partition): log_ for log_ in leader_partition_logs(settings)}
    run = RepairRun(
        actor=cli_actor(),
        clock_ms=wall_clock_ms,
        local_log=lambda topic, partition: logs.get((topic, partition)),
        dry_run=not args.apply,
    )
    repairs = repair_findings(open_store(settings), open_storage(settings), run)
    if args.json:
        print(json.dumps([asdict(r) for r in repairs], indent=2))
    else:
        for repair in repairs:
            console.print(repair.line(), highlight=False)
        console.print(_repair_summary(repairs, dry_run=run.dry_run), highlight=False)
    return EXIT_PASSED if all(r.fixed for r in repairs) else EXIT_FOUND


def _repair_summary(repairs: list[Repair], *, dry_run: bool) -> str:
    if not repairs:
        return "no open findings"
    done = sum(r.repairable for r in repairs)
    verb = "repairable" if dry_run else "repaired"
    tail = "; a dry run: --apply repairs" if dry_run else ""
    return f"{counted(len(repairs), 'open finding')}: {done} {verb}{tail}"
