"""
### Segment copy (KIP-405)

Copies rolled log segments of every tiered partition from the broker's log directories to
remote storage, as Kafka's RLMCopyTask does, one mapped task per partition.

* **Eligible:** topics registered with `remote.storage.enable=true` and tiered state ENABLED.
* **Which segments:** from max(highest remote offset + 1, log start offset), every segment
  whose next segment starts at or below the high watermark; never the active segment.
* **Per segment:** COPY_SEGMENT_STARTED → upload log, indexes, producer snapshot and
  leader-epoch entries → verify size and sha256 → COPY_SEGMENT_FINISHED.
* **Safe to clear:** a cleared or retried task resumes where it stopped. Attempts that were
  killed midway are deleted through DELETE_SEGMENT_STARTED/FINISHED before copying resumes,
  so no segment is copied twice and no object is left behind.

Concurrency is bounded by the `tierflow_copy` pool (see `airflow_settings.yaml`).
"""

from __future__ import annotations

from datetime import timedelta

import pendulum
from airflow.sdk import dag, get_current_context, task

COPY_POOL = "tierflow_copy"
# A partition lease outlives a killed task by this much; a cleared rerun takes it over at once.
LEASE_TTL_S = 900


@dag(
    dag_id="segment_copy",
    schedule="*/5 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    doc_md=__doc__,
    tags=["tierflow", "tiered-storage", "copy"],
    default_args={
        "owner": "tierflow",
        "retries": 3,
        "retry_delay": timedelta(seconds=30),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=10),
    },
)
def segment_copy() -> None:
    @task
    def list_partitions() -> list[dict]:
        from tierflow.tasks.segment_copy import list_copy_targets

        return list_copy_targets()

    @task(pool=COPY_POOL, map_index_template="{{ partition_label }}")
    def copy_partition(target: dict, lease_ttl_s: int) -> dict:
        from tierflow.tasks.segment_copy import copy_target

        context = get_current_context()
        label = f"{target['topic']}-{target['partition']}"
        context["partition_label"] = label  # type: ignore[typeddict-unknown-key]
        ti = context["ti"]
        owner = f"airflow:{ti.dag_id}.{ti.task_id}:{label}"
        return copy_target(target, owner=owner, lease_ttl_s=lease_ttl_s)

    @task
    def summarize(reports: list[dict]) -> dict:
        from tierflow.tasks.segment_copy import summarize as summarize_reports

        return summarize_reports(list(reports))

    reports = copy_partition.partial(lease_ttl_s=LEASE_TTL_S).expand(target=list_partitions())
    summarize(reports)


segment_copy()
