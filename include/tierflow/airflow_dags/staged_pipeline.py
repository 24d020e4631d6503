"""The staged pipeline's tasks, wired once for segment_copy and diskless_merge.

    plan → prepare (mapped over shards) → plan_<verb> → <verb>_with_spark | <verb>_in_worker
    → finalize (mapped over shards) → summarize → announce_new_segments

Airflow maps over shards, never partitions: a run has at most 2 x TIERFLOW_MAX_SHARDS + 8
task instances (three more per broker queue), whatever the cluster's size; prepare and
finalize run on each shard's broker queue (one mapped task per queue; see shard_tasks). A
shard task whose partitions partly failed pushes what it did (XCom key ``outcome``) and then
fails, so the next steps go ahead for the rest and on-call clears just that shard.
"""

from __future__ import annotations

from pathlib import Path

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, Context, TriggerRule, get_current_context, task

from tierflow.airflow_dags.shard_tasks import (
    OUTCOME,
    broker_queues,
    by_lane,
    finish_shard,
    label_shard,
    lane_outcomes,
    lane_task_id,
    lanes,
    map_over_lanes,
    pick_lanes,
)
from tierflow.assets import REMOTE_SEGMENTS

SPARK_POOL = "tierflow_spark"


class StagedSparkSubmitOperator(SparkSubmitOperator):
    """spark-submit with the S3 connection handed to the driver at execute time, in the
    environment it inherits: never a rendered field, an argument or an XCom."""

    def execute(self, context: Context) -> None:
        from tierflow.tasks.segment_copy import spark_s3_handover

        with spark_s3_handover():
            super().execute(context)


def _params(extra: dict) -> dict:
    return {**extra, **get_current_context()["params"]}


def wire_staged_pipeline(
    *, operation: str, verb: str, pool: str, spark_app: Path, extra_params: dict | None = None
) -> None:
    """Wire the pipeline into the DAG being defined (call inside a ``@dag`` function)."""
    extra = dict(extra_params or {})
    batch_task = f"plan_{verb}"
    queues = broker_queues()
    all_lanes = lanes(queues)

    @task
    def plan() -> dict[str, list[dict]]:
        from tierflow.tasks.staged import operation as staged
        from tierflow.tasks.staged import plan_shards

        shards = plan_shards(staged(operation), _params(extra), queues=queues)
        return by_lane(shards, all_lanes)

    @task(pool=pool, map_index_template="{{ shard_label }}")
    def prepare(shard: dict) -> None:
        from tierflow.tasks.staged import operation as staged
        from tierflow.tasks.staged import prepare_shard

        label_shard(shard)
        run_key = get_current_context()["run_id"]
        finish_shard(
            prepare_shard(
                staged(operation), shard, params=_params(extra), run_key=run_key, settings=None
            )
        )

    @task(task_id=batch_task, trigger_rule=TriggerRule.ALL_DONE)
    def plan_batch(planned: dict[str, list[dict]]) -> dict:
        from tierflow.tasks.staged import operation as staged
        from tierflow.tasks.staged import plan_batch as plan_the_batch

        _, outcomes = lane_outcomes("prepare", planned)
        run_key = get_current_context()["run_id"]
        return plan_the_batch(staged(operation), outcomes, run_key=run_key, settings=None)

    @task.branch(task_id=f"choose_{verb}")
    def choose(batch: dict) -> str:
        return f"{verb}_with_spark" if batch["use_spark"] else f"{verb}_in_worker"

    pull = f"ti.xcom_pull(task_ids='{batch_task}')"
    with_spark = StagedSparkSubmitOperator(
        task_id=f"{verb}_with_spark",
        application=str(spark_app),
        conn_id="spark_default",
        pool=SPARK_POOL,
        name=f"tierflow-{operation}",
        application_args=[
            "--jobs",
            f"{{{{ {pull}['jobs_file'] }}}}",
            "--results",
            f"{{{{ {pull}['results_file'] }}}}",
        ],
        py_files=f"{{{{ {pull}['py_files'] }}}}",
        conf={"spark.pyspark.python": f"{{{{ {pull}['python'] }}}}", "spark.ui.enabled": "false"},
    )

    @task(task_id=f"{verb}_in_worker")
    def in_worker(batch: dict) -> dict:
        from tierflow.tasks.staged import operation as staged
        from tierflow.tasks.staged import run_in_worker

        return run_in_worker(staged(operation), batch)

    @task(pool=pool, trigger_rule=TriggerRule.ALL_DONE, map_index_template="{{ shard_label }}")
    def finalize(shard: dict, batch: dict) -> None:
        from tierflow.tasks.staged import finalize_shard
        from tierflow.tasks.staged import operation as staged

        label_shard(shard)
        ti = get_current_context()["ti"]
        prepare_task = lane_task_id("prepare", shard["queue"])
        outcome = ti.xcom_pull(task_ids=prepare_task, key=OUTCOME, map_indexes=ti.map_index)
        finish_shard(finalize_shard(staged(operation), outcome, batch))

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def summarize(planned: dict[str, list[dict]]) -> dict:
        from airflow.sdk.exceptions import AirflowFailException

        from tierflow.tasks.staged import PartitionsFailedError
        from tierflow.tasks.staged import operation as staged
        from tierflow.tasks.staged import summarize as summarize_run

        shards, prepares = lane_outcomes("prepare", planned)
        _, finalizes = lane_outcomes("finalize", planned)
        try:
            return summarize_run(staged(operation), shards, prepares, finalizes)
        except PartitionsFailedError as exc:  # a retry of summarize cannot fix it
            raise AirflowFailException(str(exc)) from exc

    @task(outlets=[Asset(REMOTE_SEGMENTS)])
    def announce_new_segments(summary: dict) -> None:
        """Updates the remote-segments Asset (the index cache DAG runs on it), only if any."""
        from airflow.sdk.exceptions import AirflowSkipException

        if not summary["segments"]:
            raise AirflowSkipException("no new remote segments")

    planned = plan()
    picked = pick_lanes(planned, all_lanes)
    prepared = map_over_lanes(prepare, "prepare", picked)
    batch = plan_batch(planned)
    prepared >> batch
    worker = in_worker(batch)
    choose(batch) >> [with_spark, worker]
    finalized = map_over_lanes(finalize, "finalize", picked, batch=batch)
    for lane_finalize in finalized:
        [with_spark, worker] >> lane_finalize
    summary = summarize(planned)
    finalized >> summary
    announce_new_segments(summary)
