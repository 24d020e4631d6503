"""The work behind ``tierflow scrub`` (its options are in ``copy_commands``): imported when it
runs."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from tierflow.cli.common import cli_actor
from tierflow.cli.console import stdout_console
from tierflow.config import Settings
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.scrub.run import ScrubReport, ScrubRun, scrub
from tierflow.runtime import open_storage, open_store
from tierflow.units import counted, human_bytes

EXIT_PASSED, EXIT_FOUND = 0, 1
console = stdout_console(soft_wrap=True, highlight=False)


def scrub_command(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    budget = args.budget_bytes or settings.scrub_budget_bytes
    run = ScrubRun(budget_bytes=budget, actor=cli_actor(), clock_ms=wall_clock_ms)
    report = scrub(open_store(settings), open_storage(settings), run)
    if args.json:
        print(json.dumps(_as_json(report), indent=2))
    else:
        console.print(_summary(report), highlight=False)
    for found in report.findings:
        assert found.finding is not None
        print(
            f"tierflow: scrub: {found.finding.key}: {found.finding.what} "
            f"(segment {found.segment_id})",
            file=sys.stderr,
        )
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
