"""The full crash-injection harness: ``python -m tests.chaos`` (``make chaos``).

Prints one row per kill point with the invariants that held, then the totals, and exits 1 on
any violation. ``--scenario``, ``--layout`` and ``--sample`` narrow a run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tests.chaos.harness import KILL, RERUN, Outcome, is_fault_plan, run_scenario, totals
from tests.chaos.invariants import (
    COMPLETE,
    HISTORY,
    INVARIANTS,
    LOCAL_AFTER_REMOTE,
    NO_ORPHANS,
    READABLE,
)
from tests.chaos.scenarios import SCENARIOS, scenario
from tests.chaos.storage_faults import FAULT_PLANS, RETRIED
from tests.support.tiered import LAYOUTS

HELD, BROKEN = "[green]✓[/]", "[red]✗[/]"
HEADERS = {
    READABLE: "1 readable",
    NO_ORPHANS: "2 no orphans",
    COMPLETE: "3 complete",
    LOCAL_AFTER_REMOTE: "4 local del.",
    HISTORY: "5 history",
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    names = [s.name for s in SCENARIOS]
    parser.add_argument("--scenario", action="append", choices=names, help="default: all")
    parser.add_argument("--layout", action="append", choices=sorted(LAYOUTS), help="default: all")
    parser.add_argument("--sample", type=int, help="kill points per scenario (default: all)")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark scenario")
    parser.add_argument(
        "--faults",
        action="append",
        choices=[p.name for p in FAULT_PLANS],
        help="storage fault plans to run (default: all)",
    )
    parser.add_argument("--no-faults", action="store_true", help="kill points only")
    parser.add_argument("--work-dir", type=Path, help="default: a temporary directory")
    parser.add_argument("--json", type=Path, help="also write every outcome and the totals")
    return parser.parse_args(argv)


def mark(ok: bool) -> str:
    return HELD if ok else BROKEN


def outcome_row(outcome: Outcome) -> list[str]:
    if outcome.point == "(none)":
        killed = "—"
    elif is_fault_plan(outcome):
        killed = f"{outcome.faults_injected} faults {mark(outcome.held(RETRIED))}"
    else:
        killed = mark(outcome.held(KILL))
    return [
        outcome.scenario,
        outcome.layout,
        outcome.point,
        killed,
        mark(outcome.held(RERUN)),
        *(mark(outcome.held(name)) for name in INVARIANTS),
        f"{outcome.records_verified:,}",
        str(outcome.reconcile_fixed),
        f"{outcome.seconds:.1f}",
    ]


def outcome_table(outcomes: Sequence[Outcome]) -> Table:
    table = Table(title="Kill points and storage faults tried, invariants held", show_lines=False)
    columns = ("scenario", "layout", "kill point / faults", "killed", "rerun", *HEADERS.values())
    for column in columns:
        table.add_column(column, no_wrap=True)
    for column in ("records", "reconciled", "s"):
        table.add_column(column, justify="right")
    for outcome in outcomes:
        table.add_row(*outcome_row(outcome))
    return table


def print_report(console: Console, outcomes: Sequence[Outcome], seconds: float) -> None:
    console.print(outcome_table(outcomes))
    for outcome in outcomes:
        for violation in outcome.violations:
            console.print(
                f"[red]VIOLATION[/] {outcome.scenario}/{outcome.layout} at {outcome.point}: "
                f"{violation.invariant}: {violation.detail}",
                markup=True,
                highlight=False,
            )
    t = totals(outcomes)
    console.print(
        f"scenarios {t.scenarios} | kill points tried {t.kill_points} (killed {t.kills}) | "
        f"fault plans {t.fault_plans}, storage faults injected {t.storage_faults:,} | "
        f"invariant checks {t.invariant_checks} | violations {t.violations} | "
        f"records verified {t.records_verified:,} | {seconds:.0f} s"
    )
    for name, text in INVARIANTS.items():
        console.print(f"  {HEADERS[name]}: {text}", highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    console = Console(width=None if Console().is_terminal else 180)
    chosen = [scenario(n) for n in args.scenario] if args.scenario else list(SCENARIOS)
    if args.no_spark:
        chosen = [s for s in chosen if not s.slow]
    layouts = args.layout or sorted(LAYOUTS)
    plans = () if args.no_faults else (args.faults or [p.name for p in FAULT_PLANS])
    started = time.monotonic()
    outcomes: list[Outcome] = []

    def progress(outcome: Outcome) -> None:
        state = "ok" if outcome.ok else f"{len(outcome.violations)} VIOLATION(S)"
        console.print(
            f"{outcome.scenario}/{outcome.layout} {outcome.point}: {state} "
            f"({outcome.seconds:.1f} s)",
            highlight=False,
        )

    with tempfile.TemporaryDirectory(prefix="tierflow-chaos-", dir=args.work_dir) as work:
        for each in chosen:
            for layout in layouts:
                outcomes += run_scenario(
                    each,
                    layout,
                    Path(work),
                    sample_size=args.sample,
                    fault_plans=plans,
                    on_outcome=progress,
                )
    seconds = time.monotonic() - started
    print_report(console, outcomes, seconds)
    if args.json:
        summary = {"totals": asdict(totals(outcomes)), "seconds": round(seconds, 1)}
        summary["outcomes"] = [asdict(o) for o in outcomes]
        args.json.write_text(json.dumps(summary, indent=2))
    return 1 if totals(outcomes).violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
