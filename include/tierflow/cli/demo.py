"""``make demo``: the main job end to end on the embedded defaults.

A generated broker log directory, topics registered with tiering on, the segment_copy DAG run
by Airflow itself, then every tiered segment read back from the bucket and compared byte for
byte with the broker's file.
"""

from __future__ import annotations

import time
from pathlib import Path

from rich.console import Console

from dev.airflow_local import run_dag_in_subprocess  # not installed: the command checks
from tierflow.cli.report import PartitionFigures, partition_figures, partition_table
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.copy.verify import SegmentCheck, verify_partition
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import open_storage, open_store, partition_logs
from tierflow.transform.keyring import KeyRing
from tierflow.units import compression_ratio, human_bytes


def demo_settings(base: Path) -> Settings:
    """Aiven's chunked layout with zstd and AES-GCM, and every batch rewritten by Spark."""
    keyring = KeyRing.generate(base / "keys", "demo-key-1")
    return Settings.embedded(
        base,
        storage_layout="chunked",
        compression=True,
        keyring=keyring.path,
        spark_threshold_bytes=1,
    )


def run_demo(project: Path, base: Path, console: Console) -> int:
    settings = demo_settings(base)
    started = time.monotonic()
    store, logs = _generate(settings, console)
    state = _copy_through_airflow(project, base, settings, console)

    console.print("[bold]3/4[/bold] Reading every tiered segment back from the bucket")
    rsm = open_storage(settings)
    checks = []
    for log_ in logs:
        checks.extend(verify_partition(log_, store.topic(log_.topic), store, rsm))

    console.print("[bold]4/4[/bold] Summary")
    figures = [partition_figures(store, log_, checks) for log_ in logs]
    console.print(partition_table(figures))
    _print_summary(figures, checks, settings, started, console)
    identical = sum(1 for c in checks if c.identical)
    ok = state == "success" and checks and identical == len(checks)
    return 0 if ok else 1


def _generate(settings: Settings, console: Console) -> tuple[MetadataStore, list[PartitionLog]]:
    """Step 1: a broker log dir, its topics registered with tiering on."""
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
    return store, logs


def _copy_through_airflow(project: Path, base: Path, settings: Settings, console: Console) -> str:
    """Step 2: the segment_copy DAG, run by Airflow itself; its final state."""
    log_file = base / "segment_copy-dag.log"
    console.print(
        f"[bold]2/4[/bold] Running the segment_copy DAG through Airflow (dag.test): Spark "
        f"rewrites every segment (4 MiB chunks, zstd, AES-256-GCM with key "
        f"{KeyRing.load(settings.storage.keyring).active_key_id}); Airflow's log: {log_file}"
    )
    state = run_dag_in_subprocess(
        "segment_copy",
        project=project,
        airflow_home=base / "airflow",
        extra_env=settings.as_env(),
        log_file=log_file,
    )
    console.print(f"     DAG run finished: {state}")
    return state


def _print_summary(
    figures: list[PartitionFigures],
    checks: list[SegmentCheck],
    settings: Settings,
    started: float,
    console: Console,
) -> None:
    identical = sum(1 for c in checks if c.identical)
    remote_bytes = sum(f.remote_bytes for f in figures)
    stored = sum(f.stored_bytes or 0 for f in figures)  # the demo's segments are tierflow's
    console.print(
        f"{identical}/{len(checks)} tiered segments byte-identical to the local files after "
        f"decryption and decompression, in {time.monotonic() - started:.1f} s."
    )
    console.print(
        f"Segments {human_bytes(remote_bytes)} stored as {human_bytes(stored)}: compression "
        f"{compression_ratio(remote_bytes, stored)} (original / stored, manifests and indexes "
        f"included). Bucket: {settings.remote_storage}"
    )
    for check in checks:
        if not check.identical:
            console.print(
                f"[red]{check.topic}-{check.partition} {check.segment_id}: {check.detail}"
            )
