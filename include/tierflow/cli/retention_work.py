"""The work behind ``tierflow retention`` (its options are in ``retention_commands``):
imported when it runs."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping

from rich import box
from rich.table import Table

from tierflow.cli.common import parse_now
from tierflow.cli.status_tables import console
from tierflow.config import Settings
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.tasks.retention import expire_shard, plan_retention_shards, summarize
from tierflow.tasks.shards import failures_of
from tierflow.units import counted, human_bytes, iso_utc

EXIT_DONE, EXIT_FAILED = 0, 1
LOCAL_REPORTED_ONLY = " (local: reported only, TIERFLOW_DELETE_LOCAL_SEGMENTS is off)"
FIGURES = ("remote_segments", "remote_bytes", "local_segments", "local_bytes")


def retention_command(args: argparse.Namespace) -> int:
    now_ms = wall_clock_ms() if args.now is None else parse_now(args.now)
    settings = Settings.from_env()
    shards = plan_retention_shards(settings)
    outcomes = [
        expire_shard(shard, now_ms=now_ms, dry_run=args.dry_run, settings=settings)
        for shard in shards
    ]
    results = [r for outcome in outcomes for r in outcome.results]
    summary = summarize(results, dry_run=args.dry_run)
    failed = failures_of(shards, outcomes)
    report = {
        "now_ms": now_ms,
        "dry_run": args.dry_run,
        "plan": plan_of(results),
        "result": {
            **summary,
            "totals": _totals(summary["topics"].values()),
            "local_files_deleted": settings.delete_local_segments,
            "failed": [f.model_dump() for f in failed],
        },
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)
    if failed:
        names = ", ".join(f"{f.label} ({f.error})" for f in failed)
        failures = counted(len(failed), "partition")
        print(f"tierflow: retention: {failures} failed: {names}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_DONE


def plan_of(results: list[dict]) -> dict:
    """Per partition, the segments its run planned to delete and why; and the totals."""
    partitions = [_partition_plan(r) for r in results]
    figures = [
        {
            "remote_segments": len(p["remote"]),
            "remote_bytes": sum(d["size_bytes"] for d in p["remote"]),
            "local_segments": len(p["local"]),
            "local_bytes": sum(d["size_bytes"] for d in p["local"]),
        }
        for p in partitions
    ]
    return {"partitions": partitions, "totals": {"partitions": len(partitions), **_totals(figures)}}


def _partition_plan(result: dict) -> dict:
    remote = result["remote"]
    local = result["local"] or {"deletions": [], "new_local_log_start_offset": None}
    return {
        "topic": result["topic"],
        "partition": result["partition"],
        "new_log_start_offset": remote["new_log_start_offset"],
        "new_local_log_start_offset": local["new_local_log_start_offset"],
        "remote": [
            {k: d[k] for k in ("segment_id", "start_offset", "end_offset", "size_bytes", "reason")}
            for d in remote["deletions"]
        ],
        "local": [
            {k: d[k] for k in ("base_offset", "next_offset", "size_bytes", "reason")}
            for d in local["deletions"]
        ],
    }


def _totals(figures: Iterable[Mapping[str, int]]) -> dict[str, int]:
    totals = Counter({name: 0 for name in FIGURES})
    for one in figures:
        totals.update({name: one[name] for name in FIGURES})
    return dict(totals)


def _print(report: dict) -> None:
    out = console()
    when = f"as of {iso_utc(report['now_ms'])}" + (", dry run" if report["dry_run"] else "")
    plan = report["plan"]
    out.print(_plan_table(plan, f"retention plan, {when}"))
    out.print(
        f"plan: {_figures(plan['totals'])} in {counted(plan['totals']['partitions'], 'partition')}"
    )
    verb = "would delete" if report["dry_run"] else "deleted"
    out.print(_result_table(report["result"], f"retention result: {verb}"))
    local = "" if report["result"]["local_files_deleted"] else LOCAL_REPORTED_ONLY
    out.print(f"{verb}: {_figures(report['result']['totals'])}{local}")


def _plan_table(plan: dict, title: str) -> Table:
    """One row per partition, tier and rule: the segments that rule chose and their bytes."""
    table = _table(title, ("partition", "tier", "why", "segments", "size"))
    for p in plan["partitions"]:
        for tier in ("remote", "local"):
            for reason, (count, size) in _by_reason(p[tier]).items():
                name = f"{p['topic']}-{p['partition']}"
                table.add_row(name, tier, reason, str(count), human_bytes(size))
    return table


def _result_table(result: dict, title: str) -> Table:
    table = _table(title, ("topic", *(_column(name) for name in FIGURES)))
    for topic, figures in sorted(result["topics"].items()):
        table.add_row(topic, *(_figure(name, figures[name]) for name in FIGURES))
    return table


def _table(title: str, columns: tuple[str, ...]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
    for column in columns:
        right = column in ("segments", "size") or column.startswith(("remote ", "local "))
        table.add_column(column, justify="right" if right else "left", no_wrap=True)
    return table


def _by_reason(deletions: list[dict]) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for d in deletions:
        count, size = found.get(d["reason"], (0, 0))
        found[d["reason"]] = (count + 1, size + d["size_bytes"])
    return found


def _figures(totals: dict) -> str:
    return (
        f"{counted(totals['remote_segments'], 'remote segment')} "
        f"({human_bytes(totals['remote_bytes'])}), "
        f"{counted(totals['local_segments'], 'local segment')} "
        f"({human_bytes(totals['local_bytes'])})"
    )


def _column(name: str) -> str:
    return name.replace("_bytes", "_size").replace("_", " ")


def _figure(name: str, value: int) -> str:
    """A result figure as the tables show it: sizes in human units, counts exact."""
    return human_bytes(value) if name.endswith("_bytes") else str(value)
