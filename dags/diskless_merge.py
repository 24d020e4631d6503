"""
### Diskless merge (KIP-1163 consolidation)

Moves the older batches of consolidated diskless topics (diskless, with
`remote.storage.enable=true`) out of the shared WAL objects into ordinary tiered segments,
every 15 minutes.

* **Which batches:** per partition, the WAL's oldest batches committed at least `min_age_minutes`
  ago, in offset order, rolled into segments at `segment_bytes` (at most
  `max_segments_per_partition` per run; a backlog is worked off over several runs).
* **prepare** (one task per partition, pool `tierflow_diskless`): take the partition's copy
  lease, delete what killed attempts left, drop batches a finished segment already holds,
  record each new segment COPY_SEGMENT_STARTED.
* **merge** (one batch): read the batches' byte ranges from the WAL objects, inject their
  offsets, write .log, .index, .timeindex and the producer snapshot, then chunk, compress,
  encrypt and upload like any tiered segment: the PySpark job
  `spark_apps/merge_wal_segments.py` (one Spark task per partition, pool `tierflow_spark`), or
  below `TIERFLOW_SPARK_THRESHOLD_BYTES` the same code in the worker. No state is written.
* **finalize** (one task per partition): verify every object, record COPY_SEGMENT_FINISHED in
  offset order, then drop those batches from the WAL: objects' used sizes shrink and emptied
  objects wait `TIERFLOW_DISKLESS_DELETE_GRACE_MS` for the `diskless_gc` DAG.

Reads of merged offsets go to the tiered segments, byte for byte the same batches.
**Safe to clear:** any task, with its downstream tasks; a rerun neither loses nor duplicates
a batch. **Dry run:** lists the segments each partition would get and changes nothing.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pendulum
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, Context, Param, TriggerRule, dag, get_current_context, task

from tierflow.assets import REMOTE_SEGMENTS

DISKLESS_POOL = "tierflow_diskless"
SPARK_POOL = "tierflow_spark"
SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "merge_wal_segments.py"
BATCH = "ti.xcom_pull(task_ids='plan_merge')"


class MergeSparkSubmitOperator(SparkSubmitOperator):
    """spark-submit with the S3 connection handed to the driver at execute time, in the
    environment it inherits: never a rendered field, an argument or an XCom."""

    def execute(self, context: Context) -> None:
        from tierflow.tasks.segment_copy import spark_s3_handover

        with spark_s3_handover():
            super().execute(context)


@dag(
    dag_id="diskless_merge",
    schedule="*/15 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    doc_md=__doc__,
    tags=["tierflow", "diskless", "tiered-storage", "spark"],
    params={
        "min_age_minutes": Param(60, type="integer", minimum=0, title="Merge batches older than"),
        "topic": Param("", type="string", title="Topic", description="Empty: every topic."),
        "segment_bytes": Param(1 << 30, type="integer", minimum=1, title="segment.bytes"),
        "max_segments_per_partition": Param(8, type="integer", minimum=0, title="0: no limit"),
        "dry_run": Param(False, type="boolean", title="Dry run", description="Change nothing."),
    },
    default_args={
        "owner": "tierflow",
        "retries": 3,
        "retry_delay": timedelta(seconds=30),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=10),
    },
)
def diskless_merge() -> None:
    @task
    def list_partitions() -> list[dict]:
        from tierflow.tasks.diskless_merge import list_merge_targets

        return list_merge_targets(get_current_context()["params"]["topic"] or None)

    @task(pool=DISKLESS_POOL, map_index_template="{{ partition_label }}")
    def prepare(target: dict) -> dict:
        from tierflow.tasks.diskless_merge import prepare_target

        context = get_current_context()
        context["partition_label"] = f"{target['topic']}-{target['partition']}"
        params = context["params"]
        return prepare_target(
            target,
            run_key=context["run_id"],
            min_age_ms=int(params["min_age_minutes"]) * 60_000,
            segment_bytes=int(params["segment_bytes"]),
            max_segments=int(params["max_segments_per_partition"]) or None,
            dry_run=bool(params["dry_run"]),
        )

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def plan_merge(targets: list[dict]) -> dict:
        from tierflow.tasks.diskless_merge import plan_merge as plan

        ti = get_current_context()["ti"]
        # A partition whose prepare failed has no plan; the others still go ahead.
        prepared = [ti.xcom_pull(task_ids="prepare", map_indexes=i) for i in range(len(targets))]
        return plan(prepared, run_key=ti.run_id)

    @task.branch
    def choose_merge(batch: dict) -> str:
        return "merge_with_spark" if batch["use_spark"] else "merge_in_worker"

    merge_with_spark = MergeSparkSubmitOperator(
        task_id="merge_with_spark",
        application=str(SPARK_APP),
        conn_id="spark_default",
        pool=SPARK_POOL,
        name="tierflow-merge-wal-segments",
        application_args=[
            "--jobs",
            f"{{{{ {BATCH}['jobs_file'] }}}}",
            "--results",
            f"{{{{ {BATCH}['results_file'] }}}}",
        ],
        py_files=f"{{{{ {BATCH}['py_files'] }}}}",
        conf={"spark.pyspark.python": f"{{{{ {BATCH}['python'] }}}}", "spark.ui.enabled": "false"},
    )

    @task
    def merge_in_worker(batch: dict) -> dict:
        from tierflow.tasks.diskless_merge import merge_in_worker as merge

        return merge(batch)

    @task(trigger_rule=TriggerRule.ALL_DONE, map_index_template="{{ partition_label }}")
    def finalize(target: dict, batch: dict) -> dict | None:
        from tierflow.tasks.diskless_merge import finalize_target

        context = get_current_context()
        context["partition_label"] = f"{target['topic']}-{target['partition']}"
        ti = context["ti"]
        prepared = ti.xcom_pull(task_ids="prepare", map_indexes=ti.map_index)
        return finalize_target(prepared, batch)

    @task
    def summarize(reports: list[dict | None]) -> dict:
        from airflow.sdk.exceptions import AirflowFailException

        from tierflow.tasks.diskless_merge import PartitionsNotMergedError
        from tierflow.tasks.diskless_merge import summarize as summarize_reports

        try:
            return summarize_reports(list(reports))
        except PartitionsNotMergedError as exc:  # a retry of summarize cannot fix it
            raise AirflowFailException(str(exc)) from exc

    @task(outlets=[Asset(REMOTE_SEGMENTS)])
    def announce_new_segments(summary: dict) -> None:
        """Updates the remote-segments Asset (the index cache DAG runs on it), only if any."""
        from airflow.sdk.exceptions import AirflowSkipException

        if not summary["segments"]:
            raise AirflowSkipException("no new remote segments")

    targets = list_partitions()
    prepared = prepare.expand(target=targets)
    batch = plan_merge(targets)
    prepared >> batch
    worker = merge_in_worker(batch)
    choose_merge(batch) >> [merge_with_spark, worker]
    reports = finalize.partial(batch=batch).expand(target=targets)
    [merge_with_spark, worker] >> reports
    announce_new_segments(summarize(reports))


diskless_merge()
