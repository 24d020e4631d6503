"""The figures of cluster_scale.py beside issue 14's goals: a rich table, or JSON.

Each figure is divided by its goal (a ratio under 1.0 meets it); planning is also divided by
the ceiling measured in the same run, listing every partition directory of every broker.
"""

from __future__ import annotations

import cProfile
import io
import pstats
from dataclasses import dataclass
from typing import IO, Any

from rich.console import Console
from rich.table import Table

from tierflow.config import Settings
from tierflow.tasks.retention import plan_retention_shards
from tierflow.tasks.segment_copy import COPY
from tierflow.tasks.staged import plan_shards

NOOP_WALL_S = 60.0
MAX_TASK_INSTANCES = 64
PLAN_MS_PER_PARTITION = 1.0
RUN_LABELS = {
    "noop_copy_cold": "a. copy, no-op, cold",
    "noop_copy": "a. copy, no-op, warm",
    "copy_after_roll": "b. copy, 1% rolled",
    "retention_expiry": "c. retention",
}
WIDTH = 100  # the same table in a terminal, a pipe or the README


@dataclass(frozen=True)
class Goals:
    partitions: int  # what the plan task plans: every partition of the cluster

    def evaluate(self, figures: dict[str, Any]) -> dict[str, Any]:
        """The figures with, per run, planning per partition and every figure's ratio."""
        listing_ms = figures["ceiling"]["listing_ms_per_partition"]
        rows = []
        for key, run in figures["runs"].items():
            run["plan_ms_per_partition"] = run["plan_s"] * 1000 / self.partitions
            run["plan_vs_listing"] = run["plan_ms_per_partition"] / listing_ms
            run["work"] = _work(key, run["result"])
            wall_goal = NOOP_WALL_S if key.startswith("noop_copy") else None
            rows += [
                _row(key, "wall time, trigger to finished (s)", run["wall_s"], wall_goal),
                _row(key, "task instances", run["task_instances"], MAX_TASK_INSTANCES),
                _row(
                    key,
                    "planning per partition (ms)",
                    run["plan_ms_per_partition"],
                    PLAN_MS_PER_PARTITION,
                ),
                _row(key, "planning / listing ceiling", run["plan_vs_listing"], None),
                _row(key, run["work"][0], run["work"][1], None),
            ]
        return {**figures, "goals": rows}

    def planning_met(self, figures: dict[str, Any]) -> bool:
        return all(
            run["plan_s"] * 1000 / self.partitions < PLAN_MS_PER_PARTITION
            for run in figures["runs"].values()
        )


def _row(run: str, figure: str, value: float, goal: float | None) -> dict[str, Any]:
    ratio = value / goal if goal else None
    return {
        "run": run,
        "figure": figure,
        "value": value,
        "goal": goal,
        "ratio": ratio,
        "met": None
        if ratio is None
        else ratio <= 1.0
        if figure == "task instances"
        else ratio < 1.0,
    }


def _work(key: str, result: dict | None) -> tuple[str, int]:
    """What the run did, from its summary task's return value (none: the plan found nothing
    to do and skipped the rest)."""
    if result is None:
        return "segments copied", 0
    if key == "retention_expiry":
        verb = "segments that would expire" if result["dry_run"] else "remote segments deleted"
        return verb, sum(t["remote_segments"] for t in result["topics"].values())
    return "segments copied", int(result["segments"])


def print_table(figures: dict[str, Any]) -> None:
    cluster, ceiling = figures["cluster"], figures["ceiling"]
    copy = cluster["first_copy"]
    plan_s = figures["in_process_noop_plan_s"]
    plan_ms = plan_s * 1000 / cluster["partitions"]
    listing_ms = ceiling["listing_ms_per_partition"]
    console = Console(width=WIDTH)
    console.print(
        f"{cluster['brokers']} brokers, {cluster['partitions']:,} partitions "
        f"({cluster['replicas']:,} replicas), built in {cluster['build_s']} s; "
        f"topics sync {cluster['sync_s']} s; first copy ({copy['mode']}: "
        f"{copy['segments_copied']:,} segments copied in-process by the staged functions, "
        f"{copy['segments_cloned']:,} cloned) {copy['seconds']} s, "
        f"{copy['copy_ms_per_partition']} ms per partition copied; "
        f"Airflow ready in {figures['airflow_ready_s']} s"
    )
    console.print(
        f"ceiling: listing every partition directory of every broker "
        f"{ceiling['listing_s']:.2f} s = {ceiling['listing_ms_per_partition']:.3f} ms per "
        f"partition; the copy plan in-process (plan_shards, no task start-up) "
        f"{plan_s:.2f} s = {plan_ms:.2f} ms per partition, {plan_ms / listing_ms:.1f}x the listing"
    )
    table = Table(title="issue 14 goals")
    for column in ("run", "figure", "measured", "goal", "ratio"):
        table.add_column(column, justify="left" if column in ("run", "figure") else "right")
    for row in figures["goals"]:
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}"
        if row["met"] is False:
            ratio = f"[bold red]{ratio} MISSED[/]"
        table.add_row(
            RUN_LABELS[row["run"]],
            row["figure"],
            _number(row["value"]),
            "" if row["goal"] is None else _number(row["goal"]),
            ratio,
        )
    console.print(table)


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def print_profile(settings: Settings, *, file: IO[str], top: int = 25) -> None:
    """Where the plans' time goes, run in this process (cumulative, top functions)."""
    plans = {
        "plan_shards(COPY, {})": lambda: plan_shards(COPY, {}, settings),
        "plan_retention_shards()": lambda: plan_retention_shards(settings),
    }
    for label, plan in plans.items():
        profiler = cProfile.Profile()
        profiler.runcall(plan)
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
        print(f"cProfile of {label} in-process:", file=file)
        print(out.getvalue(), file=file)
