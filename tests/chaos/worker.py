"""DAG task bodies run in one process, for the crash harness (TIERFLOW_CRASH_AT kills it).

python -m tests.chaos.worker spark-copy        prepare, spark-submit, finalize (segment_copy)
python -m tests.chaos.worker retention NOW_MS  expire every partition (retention_expiry)
python -m tests.chaos.worker reconcile         plan and apply (remote_reconcile)

Settings come from the environment, as in an Airflow task. The rerun of a killed run is the
same command: a cleared DAG run does its tasks again in the same order.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

from tierflow.config import Settings
from tierflow.lifecycle.copy.rewrite import rewrite_results
from tierflow.tasks.reconcile import reconcile
from tierflow.tasks.retention import expire_partition, list_retention_targets
from tierflow.tasks.segment_copy import (
    finalize_target,
    list_copy_targets,
    plan_rewrite,
    prepare_target,
    rewrite_in_worker,
)

SPARK_APP = Path(__file__).resolve().parents[2] / "spark_apps" / "rewrite_segments.py"
EXIT_TASK_FAILED = 3  # a task failed without the process being killed (e.g. a Spark executor)


def spark_submit(batch: dict) -> int:
    """The DAG's spark-submit, local: each task in a fresh Python worker, so a crash point's
    ``#n`` counts the same hits in every run."""
    command = [
        str(Path(sys.executable).parent / "spark-submit"),
        *("--master", "local[2]", "--name", "tierflow-rewrite-segments"),
        *("--conf", f"spark.pyspark.python={batch.python}"),
        *("--conf", "spark.ui.enabled=false", "--conf", "spark.python.worker.reuse=false"),
        *("--py-files", batch.py_files, str(SPARK_APP)),
        *batch.spark_args,
    ]
    # spark-submit comes with pyspark and finds it through the python beside it on PATH.
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(command, env=env, check=False).returncode


def spark_copy(settings: Settings) -> int:
    """segment_copy in task order; finalize runs even when the rewrite failed (ALL_DONE)."""
    prepared = [
        prepare_target(target, lease_ttl_s=settings.copy_lease_ttl_s, settings=settings)
        for target in list_copy_targets(settings)
    ]
    batch = plan_rewrite(prepared, run_key=f"chaos-{uuid.uuid4().hex}", settings=settings)
    failed = 0
    if batch.use_spark:
        failed += spark_submit(batch) != 0
    else:
        rewrite_in_worker(batch, settings)
    results = rewrite_results(batch)
    for plan in prepared:
        try:
            finalize_target(plan, results, settings)
        except Exception as exc:  # a failed mapped task; the others still run
            print(f"finalize failed: {exc}", file=sys.stderr)
            failed += 1
    return EXIT_TASK_FAILED if failed else 0


def retention(settings: Settings, now_ms: int) -> int:
    for target in list_retention_targets(settings):
        expire_partition(target, now_ms=now_ms, dry_run=False, settings=settings)
    return 0


def main(argv: list[str]) -> int:
    settings = Settings.from_env()
    operation = argv[0]
    if operation == "spark-copy":
        return spark_copy(settings)
    if operation == "retention":
        return retention(settings, int(argv[1]))
    if operation == "reconcile":
        reconcile(apply=True, grace_hours=None, settings=settings, actor="chaos:reconcile")
        return 0
    raise SystemExit(f"unknown operation {operation!r}")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
