"""The tasks of a batch operation (``tasks.batch_operation``), wired once for partition_restore
and iceberg_export:

    plan_<verb> → <verb>_with_spark | <verb>_in_worker → <finish>

plan_<verb> plans the batch and branches (``staged_pipeline.branch_to``): a batch of
``TIERFLOW_SPARK_THRESHOLD_BYTES`` or more goes to Spark and a smaller one to the worker, and a
dry run skips all three. The finishing task pulls the batch from plan_<verb> rather than taking
it as an argument: were plan_<verb> its upstream, a dry run (both writers skipped) would still
run it.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import TriggerRule, get_current_context, task

from tierflow.airflow_dags.operations import BatchLoader
from tierflow.airflow_dags.staged_pipeline import BATCH, branch_to, planned_batch, spark_task
from tierflow.airflow_dags.task_helpers import fail_for_good


def spark_or_worker(operation: BatchLoader, *, verb: str, spark_app: Path, finish_id: str) -> None:
    """Wire the operation's tasks into the DAG being defined (call inside a ``@dag``
    function); its plan and finish get the run's params, and fail for good on what it
    refuses."""

    @task.branch(task_id=f"plan_{verb}")
    def plan() -> list[str]:
        op, context = operation(), get_current_context()
        with fail_for_good(*op.refused):
            batch = op.plan(dict(context["params"]), run_key=context["run_id"])
        return branch_to(verb, batch)

    @task(task_id=f"{verb}_in_worker")
    def in_worker(batch: dict) -> dict:
        from tierflow.tasks.batch_operation import run_in_worker

        return run_in_worker(operation(), batch)

    @task(task_id=finish_id, trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
    def finish() -> dict:
        op, context = operation(), get_current_context()
        with fail_for_good(*op.refused):
            return op.finish(dict(context["params"]), planned_batch(context["ti"], verb))

    branch = plan()
    with_spark, worker = spark_task(verb, verb, spark_app), in_worker(branch[BATCH])
    branch >> with_spark
    [with_spark, worker] >> finish()
