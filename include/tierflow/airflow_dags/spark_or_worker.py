"""The tasks after a plan that wrote a batch of jobs, wired once for partition_restore and
iceberg_export:

    plan_<verb> → choose_<verb> → <verb>_with_spark | <verb>_in_worker → <finish>

choose_<verb> sends a batch of ``TIERFLOW_SPARK_THRESHOLD_BYTES`` or more to Spark and a
smaller one to the worker, and skips all three on a dry run. The finishing task pulls the
batch from plan_<verb> rather than taking it as an argument: were plan_<verb> its upstream, a
dry run (both writers skipped) would still run it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from airflow.sdk import TriggerRule, get_current_context, task

from tierflow.airflow_dags.staged_pipeline import branch_for, spark_task


def spark_or_worker(
    verb: str,
    spark_app: Path,
    batch: Any,
    *,
    in_worker: Callable[[dict], dict],
    finish: Callable[[dict, dict], dict],
    finish_id: str,
) -> None:
    """Wire the tasks after ``batch`` (plan_<verb>'s output); ``finish`` gets the run's params
    and the batch."""

    @task.branch(task_id=f"choose_{verb}")
    def choose(batch: dict) -> list[str]:
        if batch["dry_run"]:
            return []
        return [branch_for(verb, batch)]

    @task(task_id=finish_id, trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
    def finish_batch() -> dict:
        context = get_current_context()
        planned = context["ti"].xcom_pull(task_ids=f"plan_{verb}")
        return finish(dict(context["params"]), planned)

    with_spark = spark_task(verb, verb, spark_app)
    worker = task(task_id=f"{verb}_in_worker")(in_worker)(batch)
    choose(batch) >> [with_spark, worker]
    [with_spark, worker] >> finish_batch()
