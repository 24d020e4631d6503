"""
### Remote reconcile (weekly)

Compares the bucket with the metadata store, every Sunday at 03:00 UTC. Kafka has no such
check; it answers "the bucket holds data nothing points to" and its worse twin.

* **orphan-object**: a key under `TIERFLOW_STORAGE_PREFIX` that no live segment names (also
  objects left by deleted segments, and keys outside every registered partition).
* **stale-copy**: COPY_SEGMENT_STARTED with no live copy lease, older than
  `TIERFLOW_STALE_COPY_GRACE_S` (retention's rule).
* **stale-delete**: DELETE_SEGMENT_STARTED older than the same grace.
* **missing-object / size-mismatch**: a COPY_SEGMENT_FINISHED segment whose objects are gone or
  have the wrong size. **Data loss: report-only, always.** The metadata is never dropped to
  "fix" it, so readers keep failing loudly instead of silently skipping offsets.

Partitions of deleted topics (DELETE_PARTITION_MARKED/STARTED) are left to the partition
remover.

* **Dry run by default**: the findings are logged (task `reconcile`), nothing changes.
* **`apply` on**: orphan objects older than `grace_hours` (empty: `TIERFLOW_RECONCILE_GRACE_S`,
  24 h) are deleted, stale deletes are finished and stale copies deleted through
  DELETE_SEGMENT_STARTED → DELETE_SEGMENT_FINISHED. Each is re-checked just before it is done.
* **Red run**: the last task, `check_data_loss`, fails (without retries: they cannot bring
  objects back) when missing or wrong-sized objects were found, in a dry run too. A failed fix
  fails `reconcile` itself, which retries.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import task

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.task_helpers import (
    fail_for_good,
    optional_param,
    run_param,
    switch_param,
)


@tierflow_dag(
    schedule="0 3 * * 0",
    tags=["tiered-storage", "reconcile"],
    params={
        "apply": switch_param(
            False,
            "Apply",
            "Dry run unless on: on, delete orphan objects older than the grace "
            "period and finish stale deletes and copies. Missing objects are only reported.",
        ),
        "grace_hours": optional_param(
            "number",
            "Orphan grace (hours)",
            "Only orphan objects last written longer ago than this are deleted. "
            "Empty: TIERFLOW_RECONCILE_GRACE_S (24 hours by default).",
            minimum=0,
        ),
    },
    retry_delay=timedelta(minutes=1),
    max_retry_delay=timedelta(minutes=30),
)
def remote_reconcile() -> None:
    @task
    def reconcile() -> dict:
        from tierflow.tasks.reconcile import reconcile as run_reconcile

        grace = run_param("grace_hours")
        return run_reconcile(
            apply=bool(run_param("apply")),
            grace_hours=None if grace is None else float(grace),
        )

    @task
    def check_data_loss(summary: dict) -> None:
        from tierflow.tasks.reconcile import DataLossFoundError, check_data_loss

        with fail_for_good(DataLossFoundError):
            check_data_loss(summary)

    check_data_loss(reconcile())


remote_reconcile()
