"""Lifecycle runs through a real Airflow over 3 brokers and 10,000 partitions (issue 14).

Goals (issue 14, fixed ceilings): a segment_copy run with nothing to copy finishes in under
60 s; a run has at most 64 task instances; planning costs under 1 ms per partition. The
ceiling measured in the same run: merely listing every partition directory of every broker
(``os.scandir``), which any plan of the cluster must do at least.

1. Three brokers' log dirs (``tests.support.cluster_logs``): 20 topics x 500 partitions,
   replication factor 2, leaders on every broker, every other follower lagging. Leaders are
   inferred from the leader-epoch checkpoints (no bootstrap, no KRaft log).
2. ``tierflow topics sync --config remote.storage.enable=true`` as a command, then the first
   copy: one topic through the library's staged functions in this process (plan, prepare,
   rewrite in the worker, finalize) and, by default, its result cloned to the other topics
   (``tests.support.cloned_copy``: exact, since every topic holds the same segments);
   ``--first-copy staged`` copies every topic for real (about 15 minutes on 2 cores).
3. A real local Airflow 3 (``LocalAirflow``: api-server, scheduler with the LocalExecutor,
   dag-processor; cron schedules off), and through its REST API, each timed:
   a. segment_copy with nothing to copy, twice: cold (the first tasks after Airflow started
      load the DAG bundle and imports) and warm, as a scheduler running for days sees it;
   b. segment_copy after 1% of the partitions rolled one new segment on their leader;
   c. retention_expiry after ``retention.ms`` (set in the store) expires the oldest segment of
      every partition of ``--expire-topics`` topics; deleting for real unless
      ``--retention-dry-run``.

Run from the checkout: .venv/bin/python benchmarks/cluster_scale.py
    [--dir data/bench-cluster] [--topics 20] [--partitions 500] [--first-copy clone|staged]
    [--expire-topics 2] [--retention-dry-run] [--profile] [--json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # the generators are the tests' (tests/support)

from benchmarks.dag_timing import RunTiming, time_run  # noqa: E402
from benchmarks.scale_report import Goals, print_profile, print_table  # noqa: E402
from dev.airflow_server import LocalAirflow, free_port  # noqa: E402
from tests.support.cloned_copy import clone_copies, copy_in_process  # noqa: E402
from tests.support.cluster_logs import ClusterLogs, build_cluster, roll  # noqa: E402
from tierflow.runtime import open_store  # noqa: E402
from tierflow.tasks.segment_copy import COPY  # noqa: E402
from tierflow.tasks.staged import plan_shards  # noqa: E402

MARKER = ".tierflow-bench-cluster"
RUN_TIMEOUT_S = 900
HOUR_MS = 3_600_000


def scratch_dir(path: Path) -> Path:
    """An empty scratch dir; a previous run's (it has the marker) is removed first."""
    path = path.resolve()
    if path.exists() and any(path.iterdir()):
        if not (path / MARKER).exists():
            raise SystemExit(f"--dir {path}: not empty and not a previous run's; choose another")
        shutil.rmtree(path)
    path.mkdir(parents=True, exist_ok=True)
    (path / MARKER).write_text("scratch dir of benchmarks/cluster_scale.py\n")
    return path


def sync_topics(cluster: ClusterLogs, *configs: str) -> dict[str, int]:
    """``tierflow topics sync`` as a command, with the cluster's TIERFLOW_* settings."""
    argv = [sys.executable, "-m", "tierflow.cli", "topics", "sync", "--json"]
    for config in configs:
        argv += ["--config", config]
    env = {**os.environ, **cluster.env}
    done = subprocess.run(argv, env=env, cwd=PROJECT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tierflow topics sync failed: {done.stderr.strip()[-2000:]}")
    outcomes = json.loads(done.stdout)
    rows = outcomes if isinstance(outcomes, list) else outcomes.get("topics", [])
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["action"]] = counts.get(row["action"], 0) + 1
    return counts


def first_copy(cluster: ClusterLogs, mode: str) -> dict[str, Any]:
    """Copy every eligible segment: one topic for real and clones, or all for real."""
    settings = cluster.settings
    names = list(cluster.topics)
    started = time.perf_counter()
    real = copy_in_process(settings, None if mode == "staged" else {names[0]})
    copied = time.perf_counter() - started
    cloned = 0
    if mode == "clone":
        cloned = clone_copies(open_store(settings), settings, source=names[0], targets=names[1:])
    return {
        "mode": mode,
        "seconds": round(time.perf_counter() - started, 1),
        "segments_copied": real["segments"],
        "segments_cloned": cloned,
        "copy_ms_per_partition": round(copied * 1000 / max(real["partitions"], 1), 1),
    }


def list_every_partition(log_dirs: list[Path]) -> int:
    """The ceiling: one os.scandir of every partition directory of every broker."""
    replicas = 0
    for log_dir in log_dirs:
        with os.scandir(log_dir) as entries:
            for entry in entries:
                if entry.is_dir():
                    with os.scandir(entry.path) as files:
                        for _ in files:
                            pass
                    replicas += 1
    return replicas


def timed(runs: int, work: Any) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def expire_oldest(cluster: ClusterLogs, topics: int, now_ms: int) -> int:
    """retention.ms on the first ``topics`` topics such that, at ``now_ms`` (give or take an
    hour), each partition's first segment has expired and its second has not."""
    first, second = (
        s.largest_timestamp()
        for s in cluster.leader_log(*cluster.partition_keys()[0]).segments()[:2]
    )
    retention_ms = now_ms - (first + second) // 2
    if not first + HOUR_MS < now_ms - retention_ms < second - HOUR_MS:
        raise SystemExit("the template's first two segments are too close in time to expire one")
    store = open_store(cluster.settings)
    for name in list(cluster.topics)[:topics]:
        store.register_topic(
            name, cluster.topics[name], actor="bench", now_ms=now_ms, retention_ms=retention_ms
        )
    return retention_ms


def airflow_runs(cluster: ClusterLogs, args: argparse.Namespace, log: Any) -> dict[str, Any]:
    """Start Airflow and time the three runs; the roll and retention change happen between."""
    extra = {**cluster.env, "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False"}
    home = cluster.base / "airflow-home"
    started = time.perf_counter()
    with LocalAirflow(PROJECT, home, free_port(), extra_env=extra, report=log) as airflow:
        ready = time.perf_counter() - started
        api = airflow.api

        def copy_run() -> RunTiming:
            return time_run(
                api,
                "segment_copy",
                conf={},
                plan_task="plan",
                result_task="summarize",
                timeout_s=RUN_TIMEOUT_S,
            )

        log("a. segment_copy, nothing to copy: cold (the first tasks since Airflow started)")
        cold = copy_run()
        log("a. segment_copy, nothing to copy: warm")
        noop = copy_run()
        keys = cluster.partition_keys()[
            :: max(len(cluster.partition_keys()) // max(args.rolled, 1), 1)
        ][: args.rolled]
        rolled = roll(cluster, keys)
        log(f"b. segment_copy after {rolled} partitions rolled a segment")
        after_roll = copy_run()
        retention_ms = expire_oldest(cluster, args.expire_topics, int(time.time() * 1000))
        log(f"c. retention_expiry, retention.ms={retention_ms} on {args.expire_topics} topics")
        retention = time_run(
            api,
            "retention_expiry",
            conf={"dry_run": args.retention_dry_run},
            plan_task="plan",
            result_task="report",
            timeout_s=RUN_TIMEOUT_S,
        )
    return {
        "airflow_ready_s": round(ready, 1),
        "rolled_partitions": rolled,
        "retention_ms": retention_ms,
        "runs": {
            "noop_copy_cold": cold.as_dict(),
            "noop_copy": noop.as_dict(),
            "copy_after_roll": after_roll.as_dict(),
            "retention_expiry": retention.as_dict(),
        },
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=PROJECT / "data" / "bench-cluster")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=500, help="per topic")
    parser.add_argument("--first-copy", choices=("clone", "staged"), default="clone")
    parser.add_argument("--rolled", type=int, default=0, help="partitions to roll (default 1%%)")
    parser.add_argument("--expire-topics", type=int, default=2)
    parser.add_argument("--retention-dry-run", action="store_true")
    parser.add_argument("--profile", action="store_true", help="cProfile the plan in-process")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    args.rolled = args.rolled or max(args.topics * args.partitions // 100, 1)
    return args


def main() -> None:
    args = parse_args()
    logging.disable(logging.INFO)  # the library's per-partition lines; figures go to stdout
    log = (lambda text: print(text, file=sys.stderr)) if args.json else print
    base = scratch_dir(args.dir)
    started = time.perf_counter()
    names = [f"topic-{t:02d}" for t in range(args.topics)]
    now_ms = int(time.time() * 1000)
    cluster = build_cluster(base, topics=names, partitions=args.partitions, now_ms=now_ms)
    built = time.perf_counter() - started
    partitions = args.topics * args.partitions
    log(f"built 3 brokers, {partitions:,} partitions x 2 replicas in {built:.1f} s ({base})")
    started = time.perf_counter()
    synced = sync_topics(cluster, "remote.storage.enable=true")
    sync_s = time.perf_counter() - started
    log(f"tierflow topics sync: {synced} in {sync_s:.1f} s")
    copy = first_copy(cluster, args.first_copy)
    log(f"first copy: {copy}")
    log_dirs = [path for path in cluster.log_dirs.values()]
    replicas = list_every_partition(log_dirs)
    listing = timed(3, lambda: list_every_partition(log_dirs))
    settings = cluster.settings
    in_process = timed(3, lambda: plan_shards(COPY, {}, settings))
    figures = {
        "cluster": {
            "brokers": len(cluster.log_dirs),
            "topics": args.topics,
            "partitions": partitions,
            "replicas": replicas,
            "build_s": round(built, 1),
            "sync_s": round(sync_s, 1),
            "synced": synced,
            "first_copy": copy,
        },
        "ceiling": {"listing_s": listing, "listing_ms_per_partition": listing * 1000 / partitions},
        "in_process_noop_plan_s": in_process,
        **airflow_runs(cluster, args, log),
    }
    goals = Goals(partitions=partitions)
    if args.json:
        print(json.dumps(goals.evaluate(figures), indent=2))
    else:
        print_table(goals.evaluate(figures))
    if args.profile or not goals.planning_met(figures):
        print_profile(settings, file=sys.stderr if args.json else sys.stdout)


if __name__ == "__main__":
    main()
