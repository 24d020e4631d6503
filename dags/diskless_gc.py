"""
### Diskless garbage collection (hourly)

Frees object storage held by diskless topics' WAL objects.

* **Retention** first: `retention.ms` and `retention.bytes` of every diskless topic, applied to
  its oldest WAL batches (the log start offset moves past them). Objects whose used size drops
  to zero are marked for deletion, due after `TIERFLOW_DISKLESS_DELETE_GRACE_MS` so that
  fetches already holding their coordinates finish.
* **Garbage collection**: deletes every WAL object whose used size has been zero longer than
  that grace period (emptied by retention or by the `diskless_merge` DAG), and every object
  uploaded but never committed within `TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS` (a writer that
  died or lost the coordinator). Rows go only after storage confirmed the delete.

**Safe to clear:** a run killed anywhere is finished by the next one.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import task

from tierflow.airflow_dags.defaults import tierflow_dag

DISKLESS_POOL = "tierflow_diskless"


@tierflow_dag(
    schedule="@hourly",
    tags=["diskless", "retention"],
    retry_delay=timedelta(minutes=1),
    max_retry_delay=timedelta(minutes=15),
)
def diskless_gc() -> None:
    @task(pool=DISKLESS_POOL)
    def apply_retention() -> dict:
        from tierflow.lifecycle.clock import wall_clock_ms
        from tierflow.tasks.diskless_gc import apply_retention as apply

        return apply(now_ms=wall_clock_ms())

    @task(pool=DISKLESS_POOL)
    def collect_garbage(retention: dict) -> dict:
        from tierflow.lifecycle.clock import wall_clock_ms
        from tierflow.tasks.diskless_gc import collect_garbage as collect

        return collect(now_ms=wall_clock_ms())

    collect_garbage(apply_retention())


diskless_gc()
