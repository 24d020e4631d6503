"""``make demo``: the main job end to end on the embedded defaults.

A generated broker log directory, topics registered with tiering on, the segment_copy DAG run
by Airflow itself, then every tiered segment read back from the bucket and compared byte for
byte with the broker's file.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from tierflow.airflow_local import run_dag_in_subprocess
from tierflow.cli.report import human_bytes, partition_table
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.verify import verify_partition
from tierflow.runtime import open_storage, open_store, partition_logs


def run_demo(project: Path, base: Path, console: Console) -> int:
    settings = Settings.embedded(base)
    started = time.monotonic()

    console.print(f"[bold]1/4[/bold] Generating a broker log directory in {settings.log_dirs[0]}")
    generate_log_dir(settings.log_dirs[0])
    logs = partition_logs(settings.log_dirs)
    local_bytes = sum(s.size_in_bytes() for log_ in logs for s in log_.segments())
    console.print(f"     {len(logs)} partitions, {human_bytes(local_bytes)} of segments")

    store = open_store(settings)
    topics = sorted({(log_.topic, log_.topic_id()) for log_ in logs})
    for name, topic_id in topics:
        store.register_topic(
            name, topic_id, actor="demo", now_ms=wall_clock_ms(), remote_storage_enable=True
        )
    console.print(
        f"     registered {', '.join(n for n, _ in topics)} with remote.storage.enable=true"
    )

    airflow_home = base / "airflow"
    log_file = base / "segment_copy-dag.log"
    console.print(
        f"[bold]2/4[/bold] Running the segment_copy DAG through Airflow (dag.test); "
        f"Airflow's log: {log_file}"
    )
    state = run_dag_in_subprocess(
        "segment_copy",
        project=project,
        airflow_home=airflow_home,
        extra_env=settings.as_env(),
        log_file=log_file,
    )
    console.print(f"     DAG run finished: {state}")

    console.print("[bold]3/4[/bold] Reading every tiered segment back from the bucket")
    rsm = open_storage(settings)
    checks = []
    for log_ in logs:
        checks.extend(verify_partition(log_, store.topic(log_.topic), store, rsm))
    identical = sum(1 for c in checks if c.identical)

    console.print("[bold]4/4[/bold] Summary")
    console.print(partition_table(store, logs, checks))
    remote_bytes = sum(c.size_in_bytes for c in checks)
    console.print(
        f"{identical}/{len(checks)} tiered segments byte-identical to the local files "
        f"({human_bytes(remote_bytes)}) in {time.monotonic() - started:.1f} s. "
        f"Bucket: {settings.remote_storage}"
    )
    for check in checks:
        if not check.identical:
            console.print(
                f"[red]{check.topic}-{check.partition} {check.segment_id}: {check.detail}"
            )
    ok = state == "success" and checks and identical == len(checks)
    return 0 if ok else 1
