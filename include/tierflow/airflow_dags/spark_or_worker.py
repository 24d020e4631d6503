"""The tasks of a batch operation (``tasks.batch_operation``), wired once for partition_restore
and iceberg_export:

    plan_<verb> → choose_<verb> → <verb>_with_spark | <verb>_in_worker → <finish>

choose_<verb> sends a batch of ``TIERFLOW_SPARK_THRESHOLD_BYTES`` or more to Spark and a
smaller one to the worker, and skips all three on a dry run. The finishing task pulls the
batch from plan_<verb> rather than taking it as an argument: were plan_<verb> its upstream, a
dry run (both writers skipped) would still run it.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import TriggerRule, get_current_context, task

from tierflow.airflow_dags.operations import BatchLoader
from tierflow.airflow_dags.staged_pipeline import branch_for, spark_task
from tierflow.airflow_dags.task_helpers import fail_for_good


def spark_or_worker(operation: BatchLoader, *, verb: str, spark_app: Path, finish_id: str) -> None:
    """Wire the operation's tasks into the DAG being defined (call inside a ``@dag``
    function); its plan and finish get the run's params, and fail for good on what it
    refuses."""

    @task(task_id=f"plan_{verb}")
    def plan() -> dict:
        op, context = operation(), get_current_context()
        with fail_for_good(*op.refused):
            return op.plan(dict(context["params"]), run_key=context["run_id"])

    @task.branch(task_id=f"choose_{verb}")
    def choose(batch: dict) -> list[str]:
        if batch["dry_run"]:
            return []
        return [branch_for(verb, batch)]

    @task(task_id=f"{verb}_in_worker")
    def in_worker(batch: dict) -> dict:
        from tierflow.tasks.batch_operation import run_in_worker

        return run_in_worker(operation(), batch)

    @task(task_id=finish_id, trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
    def finish() -> dict:
        op, context = operation(), get_current_context()
        planned = context["ti"].xcom_pull(task_ids=f"plan_{verb}")
        with fail_for_good(*op.refused):
            return op.finish(dict(context["params"]), planned)

    batch = plan()
    with_spark, worker = spark_task(verb, verb, spark_app), in_worker(batch)
    choose(batch) >> [with_spark, worker]
    [with_spark, worker] >> finish()
