"""How fast the Tiered storage page and ``tierflow status`` answer over 10,000 partitions.

Target (issue 14): the page and ``tierflow status --json`` stay usable at 10,000 partitions:
served in under 2 s. Each figure is printed as wall time and CPU time: on the project's shared
2-core machine the wall time grows with whatever else runs, the CPU time does not.

The store and log dirs are generated (``tests.support.many_partitions``): 20 topics x 500
partitions, 3 rolled segments each, 0-3 of them tiered, some stuck copies and failed deletes
(about 15,000 segment rows and 30,000 events). Then, each the median of ``--runs`` runs:

* the floor, measured in the same run: what any view of every partition must do at least:
  find every partition's leader replica (``tierflow.cluster.leaders.leader_logs``), list every
  partition directory once with its segments' sizes, and one GROUP BY of the segment rows;
* the snapshot (``build_snapshot``), default view (topic rows) and a topic's page of 50;
* the page's routes (HTML and ``/api/snapshot``) through the web app, without Airflow's login;
* ``tierflow status --json`` as a command, and its start-up alone (``tierflow status --help``:
  Python and the imports of every ``tierflow`` command);
* for comparison, what the view did before issue 14 for every partition, extrapolated from
  ``--sample`` partitions: the retention plan of each (the DAG's planners) and its gauges.

Run from the checkout: .venv/bin/python benchmarks/operator_view_scale.py
    [--topics 20] [--partitions 500] [--runs 3] [--sample 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))  # the generator is the tests' (tests/support)

from tests.support.many_partitions import ManyPartitions, build_many_partitions  # noqa: E402
from tierflow.cluster.leaders import leader_logs  # noqa: E402
from tierflow.metrics import compute_metrics, local_logs  # noqa: E402
from tierflow.operator_view.aggregate import state_totals  # noqa: E402
from tierflow.operator_view.app import create_app  # noqa: E402
from tierflow.operator_view.collector import collector_paused  # noqa: E402
from tierflow.operator_view.disk import segment_sizes  # noqa: E402
from tierflow.operator_view.options import ViewOptions  # noqa: E402
from tierflow.operator_view.retention_preview import preview_retention  # noqa: E402
from tierflow.operator_view.snapshot import build_snapshot  # noqa: E402

TARGET_S = 2.0
HOUR_MS = 3_600_000


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the ``tierflow`` commands)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(runs: int, work: Callable[[], Any]) -> tuple[float, float]:
    """The median wall time and CPU time of ``runs`` calls, in seconds. On a machine shared
    with other work the CPU time is what the same call takes on an idle one (minus I/O)."""
    walls, cpus = [], []
    for _ in range(runs):
        started, cpu = time.perf_counter(), cpu_seconds()
        work()
        walls.append(time.perf_counter() - started)
        cpus.append(cpu_seconds() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def floor(m: ManyPartitions) -> None:
    """Under the same conditions as a snapshot: the cyclic collector paused."""
    with collector_paused():
        leaders = leader_logs(m.settings)
        for leader in leaders:
            segment_sizes(leader.log)
        state_totals(m.store, None, None)


def floor_leaders(m: ManyPartitions) -> None:
    with collector_paused():
        leader_logs(m.settings)


def status(m: ManyPartitions, *argv: str) -> None:
    env = {**os.environ, **m.settings.as_env()}
    subprocess.run(
        [sys.executable, "-m", "tierflow.cli", "status", *argv],
        check=True,
        capture_output=True,
        env=env,
        cwd=PROJECT,
    )


def before(m: ManyPartitions, sample: int, runs: int) -> tuple[float, float]:
    """CPU seconds per partition of the old snapshot's per-partition work: its retention
    plan (the DAG's planners, fresh checkpoints each time) and its gauges (compute_metrics)."""
    logs = {log_.key: log_ for log_ in local_logs(m.settings.log_dirs)}  # as before: plain
    keys = sorted(logs)[:sample]
    now_ms = m.now_ms + HOUR_MS
    _wall, plan = timed(
        runs,
        lambda: preview_retention(
            m.store,
            {k: logs[k] for k in keys},
            as_of_ms=now_ms,
            copy_grace_ms=0,
            delete_local_files=False,
            partitions=keys,
        ),
    )
    _wall, gauges = timed(runs, lambda: compute_metrics(m.store, m.settings.log_dirs))
    return plan / sample, gauges


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--partitions", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sample", type=int, default=200)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="tierflow-view-bench-"))
    started = time.perf_counter()
    m = build_many_partitions(base, topics=args.topics, partitions=args.partitions)
    total = args.topics * args.partitions
    print(f"built {total:,} partitions in {time.perf_counter() - started:.1f} s ({base})")
    topic = m.topics[len(m.topics) // 2]
    now_ms = m.now_ms + HOUR_MS
    client = TestClient(create_app(auth=lambda: None, settings=lambda: m.settings))

    def snapshot(**options: Any) -> Callable[[], Any]:
        view = ViewOptions(**options)
        return lambda: build_snapshot(m.store, m.settings, now_ms=now_ms, options=view)

    def get(path: str) -> Callable[[], Any]:
        return lambda: client.get(path).raise_for_status()

    runs = args.runs
    lowest, lowest_cpu = timed(runs, lambda: floor(m))
    leaders, leaders_cpu = timed(runs, lambda: floor_leaders(m))
    print(f"load average at the start: {os.getloadavg()[0]:.1f} (2 cores: ~2 is busy)")
    print(f"{'':44s} {'wall':>7s} {'CPU':>7s}  CPU / the floor's")
    print(f"{'floor: leaders, one listing each, GROUP BY':44s} {lowest:5.2f} s {lowest_cpu:5.2f} s")
    print(f"{'  of which finding the leaders':44s} {leaders:5.2f} s {leaders_cpu:5.2f} s")
    cases = [
        ("snapshot, topic rows (default view)", snapshot()),
        (f"snapshot, {topic} page 1 of 50", snapshot(topic=topic)),
        (f"snapshot, {topic} page 10 of 50", snapshot(topic=topic, page=10)),
        ("page HTML, default view", get("/")),
        (f"page HTML, {topic} page 2", get(f"/?topic={topic}&page=2")),
        ("/api/snapshot, default view", get("/api/snapshot")),
        ("tierflow status --json", lambda: status(m, "--json")),
        (f"tierflow status --json --topic {topic}", lambda: status(m, "--json", "--topic", topic)),
        ("  start-up alone (tierflow status --help)", lambda: status(m, "--help")),
    ]
    for label, work in cases:
        wall, cpu = timed(runs, work)
        verdict = "under" if cpu < TARGET_S else "OVER"
        print(
            f"{label:44s} {wall:5.2f} s {cpu:5.2f} s  {cpu / lowest_cpu:4.1f}x "
            f"({verdict} {TARGET_S:.0f} s of CPU)"
        )
    per_partition, gauges = before(m, args.sample, 1)  # seconds each: once is enough
    print(
        f"before (CPU): a retention plan per partition {per_partition * 1000:.1f} ms "
        f"(x {total:,} = {per_partition * total:.0f} s), gauges of every partition "
        f"{gauges:.2f} s; both ran on every view"
    )
    m.store.close()


if __name__ == "__main__":
    main()
