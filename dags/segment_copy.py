"""
### Segment copy (KIP-405)

Copies rolled log segments of every tiered partition from the broker's log directories to
remote storage, as Kafka's RLMCopyTask does.

* **Eligible:** topics registered with `remote.storage.enable=true` and tiered state ENABLED.
* **Which segments:** from max(highest remote offset + 1, log start offset), every segment
  whose next segment starts at or below the high watermark; never the active segment.
* **prepare** (one task per partition): take the partition's lease, delete what killed
  attempts left, check each segment and record it COPY_SEGMENT_STARTED.
* **rewrite** (one batch): chunk, compress, encrypt and upload every segment, one Spark task
  per segment (`rewrite_with_spark`, through the `spark_default` connection) or, below
  `TIERFLOW_SPARK_THRESHOLD_BYTES`, in the worker (`rewrite_in_worker`). No state is written.
  An S3 bucket is reached through `TIERFLOW_AWS_CONN_ID` (`aws_default`); Spark's driver gets
  the connection in its environment only, never as an argument, template or XCom.
* **finalize** (one task per partition): verify every object, record COPY_SEGMENT_FINISHED in
  offset order, release the lease.

**Safe to clear:** clear any failed task (with its downstream tasks) and the rerun finishes the
job. Rewrites skip segments that are no longer COPY_SEGMENT_STARTED, finalizing treats FINISHED
segments as done, and the next prepare deletes any half-done attempt.

Pools: `tierflow_copy` bounds partition tasks, `tierflow_spark` the Spark jobs
(`airflow_settings.yaml`).
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, Context, TriggerRule, dag, get_current_context, task

from tierflow.assets import REMOTE_SEGMENTS

COPY_POOL = "tierflow_copy"
SPARK_POOL = "tierflow_spark"
SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "rewrite_segments.py"
# A partition lease outlives a killed task by this much; a cleared rerun takes it over at once.
LEASE_TTL_S = 900
BATCH = "ti.xcom_pull(task_ids='plan_rewrite')"


class RewriteSparkSubmitOperator(SparkSubmitOperator):
    """spark-submit with the S3 connection handed to the driver at execute time, in the
    environment it inherits: never a rendered field, an argument or an XCom."""

    def execute(self, context: Context) -> None:
        from tierflow.tasks.segment_copy import spark_s3_handover

        with spark_s3_handover():
            super().execute(context)


@dag(
    dag_id="segment_copy",
    schedule="*/5 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    doc_md=__doc__,
    tags=["tierflow", "tiered-storage", "copy", "spark"],
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
    def prepare(target: dict, lease_ttl_s: int) -> dict:
        from tierflow.tasks.segment_copy import prepare_target

        get_current_context()["partition_label"] = f"{target['topic']}-{target['partition']}"
        return prepare_target(target, lease_ttl_s=lease_ttl_s)

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def plan_rewrite(targets: list[dict]) -> dict:
        from tierflow.tasks.segment_copy import plan_rewrite as plan

        ti = get_current_context()["ti"]
        # A partition whose prepare failed has no plan; the others still go ahead.
        prepared = [ti.xcom_pull(task_ids="prepare", map_indexes=i) for i in range(len(targets))]
        return plan(prepared, run_key=ti.run_id)

    @task.branch
    def choose_rewrite(batch: dict) -> str:
        return "rewrite_with_spark" if batch["use_spark"] else "rewrite_in_worker"

    rewrite_with_spark = RewriteSparkSubmitOperator(
        task_id="rewrite_with_spark",
        application=str(SPARK_APP),
        conn_id="spark_default",
        pool=SPARK_POOL,
        name="tierflow-rewrite-segments",
        application_args=[
            "--jobs",
            f"{{{{ {BATCH}['jobs_file'] }}}}",
            "--results",
            f"{{{{ {BATCH}['results_file'] }}}}",
        ],
        py_files=f"{{{{ {BATCH}['py_files'] }}}}",
        conf={
            "spark.pyspark.python": f"{{{{ {BATCH}['python'] }}}}",
            "spark.ui.enabled": "false",
        },
    )

    @task
    def rewrite_in_worker(batch: dict) -> dict:
        from tierflow.tasks.segment_copy import rewrite_in_worker as rewrite

        return rewrite(batch)

    @task(trigger_rule=TriggerRule.ALL_DONE, map_index_template="{{ partition_label }}")
    def finalize(target: dict, batch: dict) -> dict | None:
        from tierflow.tasks.segment_copy import finalize_target

        context = get_current_context()
        context["partition_label"] = f"{target['topic']}-{target['partition']}"
        ti = context["ti"]
        prepared = ti.xcom_pull(task_ids="prepare", map_indexes=ti.map_index)
        return finalize_target(prepared, batch)

    @task
    def summarize(reports: list[dict | None]) -> dict:
        from airflow.sdk.exceptions import AirflowFailException

        from tierflow.tasks.segment_copy import PartitionsNotCopiedError
        from tierflow.tasks.segment_copy import summarize as summarize_reports

        try:
            return summarize_reports(list(reports))
        except PartitionsNotCopiedError as exc:  # a retry of summarize cannot fix it
            raise AirflowFailException(str(exc)) from exc

    @task(outlets=[Asset(REMOTE_SEGMENTS)])
    def announce_new_segments(summary: dict) -> None:
        """Updates the remote-segments Asset (the index cache DAG runs on it), only if any."""
        from airflow.sdk.exceptions import AirflowSkipException

        if not summary["segments"]:
            raise AirflowSkipException("no new remote segments")

    targets = list_partitions()
    prepared = prepare.partial(lease_ttl_s=LEASE_TTL_S).expand(target=targets)
    batch = plan_rewrite(targets)
    prepared >> batch
    worker = rewrite_in_worker(batch)
    choose_rewrite(batch) >> [rewrite_with_spark, worker]
    reports = finalize.partial(batch=batch).expand(target=targets)
    [rewrite_with_spark, worker] >> reports
    announce_new_segments(summarize(reports))


segment_copy()
