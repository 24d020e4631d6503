"""The staged pipeline's tasks, wired once for segment_copy, diskless_merge and remote_compaction.

    plan → prepare (mapped over shards) → plan_<verb> → <verb>_with_spark | <verb>_in_worker
    → finalize (mapped over shards) → summarize → announce_new_segments

Airflow maps over shards, never partitions: a run has at most 2 x TIERFLOW_MAX_SHARDS + 6
task instances (with broker queues, three more per queue and one for the default queue),
whatever the cluster's size, and a run with nothing to do has one (plan short-circuits the
rest); prepare and finalize run on each shard's broker queue (one mapped task per queue; see
shard_tasks). plan_<verb> plans the batch and branches to the task that runs it, in one task:
the batch goes on under the XCom key ``batch``, and the branch is its return value. A shard
task whose partitions partly failed pushes what it did (XCom key ``outcome``) and then fails,
so the next steps go ahead for the rest and on-call clears just that shard.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, Context, TriggerRule, get_current_context, task

from tierflow.airflow_dags.operations import Loader
from tierflow.airflow_dags.shard_tasks import (
    OUTCOME,
    Planned,
    broker_queues,
    finish_shard,
    for_lanes,
    label_shard,
    lane_outcomes,
    lane_task_id,
    lanes,
    map_over_lanes,
    pick_lanes,
)
from tierflow.airflow_dags.task_helpers import fail_for_good
from tierflow.assets import REMOTE_SEGMENTS

SPARK_POOL = "tierflow_spark"
# plan_<verb> pushes the batch it planned under this key; its return value is the branch taken.
BATCH = "batch"


class StagedSparkSubmitOperator(SparkSubmitOperator):
    """spark-submit over the batch plan_<verb> planned, read as its typed ``Batch`` when the
    task's fields are rendered (so the UI shows the real arguments), with the S3 connection
    handed to the driver at execute time, in the environment it inherits: never a rendered
    field, an argument or an XCom."""

    def __init__(self, *, verb: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.verb = verb

    def render_template_fields(self, context: Context, jinja_env: Any = None) -> None:
        from tierflow.engine.batch_files import Batch

        super().render_template_fields(context, jinja_env)
        batch = Batch.model_validate(planned_batch(context["ti"], self.verb))
        self.application_args, self.py_files = batch.spark_args, batch.py_files
        self.conf = {**(self.conf or {}), **batch.spark_conf}

    def execute(self, context: Context) -> None:
        from tierflow.tasks.segment_copy import spark_bucket_handover

        with spark_bucket_handover():
            super().execute(context)


def _params(extra: dict) -> dict:
    return {**extra, **get_current_context()["params"]}


def wire_staged_pipeline(
    *, operation: Loader, verb: str, pool: str, spark_app: Path, extra_params: dict | None = None
) -> None:
    """Wire the pipeline into the DAG being defined (call inside a ``@dag`` function)."""
    extra = dict(extra_params or {})
    queues = broker_queues()
    all_lanes = lanes(queues)
    name = operation.__name__.removesuffix("_operation")
    with_spark = spark_task(name, verb, spark_app)
    planned = _plan_task(operation, extra, queues, all_lanes)()
    picked = pick_lanes(planned, all_lanes)
    prepared = map_over_lanes(_prepare_task(operation, pool, extra), "prepare", picked)
    branch = _plan_batch_task(operation, verb)(planned)
    prepared >> branch
    worker = _in_worker_task(operation, verb)(branch[BATCH])
    branch >> with_spark
    finalize = _finalize_task(operation, pool, verb)
    finalized = map_over_lanes(finalize, "finalize", picked)
    for lane_finalize in finalized:
        [with_spark, worker] >> lane_finalize
    summary = _summarize_task(operation)(planned)
    finalized >> summary
    announce_new_segments(summary)


def _plan_task(operation: Loader, extra: dict, queues: dict[int, str], all_lanes: list[str]) -> Any:
    """plan: the partitions with work, cut into shards, grouped by lane. With none, every later
    task is skipped at once: an idle run is this one task instance, and announces nothing."""

    @task.short_circuit(ignore_downstream_trigger_rules=True)
    def plan() -> Planned:
        from tierflow.tasks.staged import plan_shards

        shards = plan_shards(operation(), _params(extra), queues=queues)
        return for_lanes(shards, all_lanes) if shards else []

    return plan


def _prepare_task(operation: Loader, pool: str, extra: dict) -> Any:
    """prepare (mapped over a lane's shards): each partition ready for the batch."""

    @task(pool=pool, map_index_template="{{ shard_label }}")
    def prepare(shard: dict) -> None:
        from tierflow.tasks.staged import prepare_shard

        label_shard(shard)
        run_key = get_current_context()["run_id"]
        finish_shard(
            prepare_shard(operation(), shard, params=_params(extra), run_key=run_key, settings=None)
        )

    return prepare


def _plan_batch_task(operation: Loader, verb: str) -> Any:
    """plan_<verb>: one batch of every prepared partition's jobs, and the branch to Spark or
    the worker (``branch_to``)."""

    @task.branch(task_id=f"plan_{verb}", trigger_rule=TriggerRule.ALL_DONE)
    def plan_batch(planned: Planned) -> list[str]:
        from tierflow.tasks.staged import plan_batch as plan_the_batch

        _, outcomes = lane_outcomes("prepare", planned)
        run_key = get_current_context()["run_id"]
        batch = plan_the_batch(operation(), outcomes, run_key=run_key, settings=None)
        return branch_to(verb, batch.as_xcom())

    return plan_batch


def branch_to(verb: str, batch: dict) -> list[str]:
    """A plan_<verb> task's end: its batch pushed under ``BATCH`` for the tasks after it, and
    the one task that runs it (none for a dry run). Planning and choosing in one task spares
    every run a task instance of its own for the choice."""
    get_current_context()["ti"].xcom_push(key=BATCH, value=batch)
    return [] if batch.get("dry_run") else [branch_for(verb, batch)]


def planned_batch(ti: Any, verb: str) -> dict:
    """The batch plan_<verb> pushed, for a task that pulls it rather than taking it as an
    argument: an argument would make it a direct downstream of the branch, which skips it."""
    return ti.xcom_pull(task_ids=f"plan_{verb}", key=BATCH)


def branch_for(verb: str, batch: dict) -> str:
    """The task that runs the batch: Spark's at TIERFLOW_SPARK_THRESHOLD_BYTES and above."""
    from tierflow.engine.batch_files import Batch

    use_spark = Batch.model_validate(batch).use_spark
    return f"{verb}_with_spark" if use_spark else f"{verb}_in_worker"


def spark_task(name: str, verb: str, spark_app: Path) -> StagedSparkSubmitOperator:
    """<verb>_with_spark: the batch's jobs file through spark-submit, paths from plan_<verb>."""
    return StagedSparkSubmitOperator(
        task_id=f"{verb}_with_spark",
        verb=verb,
        application=str(spark_app),
        conn_id="spark_default",
        pool=SPARK_POOL,
        name=f"tierflow-{name}",
    )


def _in_worker_task(operation: Loader, verb: str) -> Any:
    """<verb>_in_worker: a batch too small for Spark, run in this worker."""

    @task(task_id=f"{verb}_in_worker")
    def in_worker(batch: dict) -> dict:
        from tierflow.engine.batch_files import Batch
        from tierflow.tasks.staged import run_in_worker

        return run_in_worker(operation(), Batch.model_validate(batch))

    return in_worker


def _finalize_task(operation: Loader, pool: str, verb: str) -> Any:
    """finalize (mapped over a lane's shards): verify and record, whatever the batch did."""

    @task(pool=pool, trigger_rule=TriggerRule.ALL_DONE, map_index_template="{{ shard_label }}")
    def finalize(shard: dict) -> None:
        from tierflow.engine.batch_files import Batch
        from tierflow.tasks.shards import shard_outcome
        from tierflow.tasks.staged import finalize_shard

        label_shard(shard)
        ti = get_current_context()["ti"]
        prepare_task = lane_task_id("prepare", shard["queue"])
        outcome = ti.xcom_pull(task_ids=prepare_task, key=OUTCOME, map_indexes=ti.map_index)
        planned = Batch.model_validate(planned_batch(ti, verb))
        finish_shard(finalize_shard(operation(), shard_outcome(outcome), planned))

    return finalize


def _summarize_task(operation: Loader) -> Any:
    @task(trigger_rule=TriggerRule.ALL_DONE)
    def summarize(planned: Planned) -> dict:
        from tierflow.tasks.staged import PartitionsFailedError
        from tierflow.tasks.staged import summarize as summarize_run

        shards, prepares = lane_outcomes("prepare", planned)
        _, finalizes = lane_outcomes("finalize", planned)
        with fail_for_good(PartitionsFailedError):  # a retry of summarize cannot fix it
            return summarize_run(operation(), shards, prepares, finalizes)

    return summarize


@task(outlets=[Asset(REMOTE_SEGMENTS)])
def announce_new_segments(summary: dict) -> None:
    """Updates the remote-segments Asset (the index cache DAG runs on it), only if any."""
    from airflow.sdk.exceptions import AirflowSkipException

    if not summary["segments"]:
        raise AirflowSkipException("no new remote segments")
