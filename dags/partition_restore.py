"""
### Partition restore (the way back from the bucket)

Triggered from the UI (**Trigger DAG** shows a form): rebuild a topic's partitions from remote
storage as log directories a Kafka broker of the same version loads: every remote segment's
`.log` byte for byte, its indexes and producer snapshot, `leader-epoch-checkpoint`,
`partition.metadata` and the log dir's log-start and recovery-point checkpoint lines.

* **to**: the target log dir. A log dir whose `.lock` a running broker holds, or a partition
  directory holding files the restore would not write, is refused untouched.
* **to_offset** / **to_timestamp**: end with the batch holding that offset, or the segment
  holding the first record at or after that time (ms); empty: everything remote.
* **as_topic**: restore a copy beside the live topic, under this name and an id of its own.

**plan_restore** checks every target and lists the segments still missing; a batch of
`TIERFLOW_SPARK_THRESHOLD_BYTES` or more is written by **restore_with_spark** (one Spark task
per segment, through `spark_default`), a smaller one by **restore_in_worker**, with the same
code; neither writes metadata state. **finish_restore** writes each partition's checkpoint
files and records the restore once every segment is in place.

**Dry run** (on by default): plan_restore's log lists the segments, bytes and target
directories, and nothing is written. A failed or killed task, cleared, continues where it
stopped; a finished restore run again changes nothing. Every restore is in the event history,
with finish_restore's task instance as its actor.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import Param, TriggerRule, get_current_context, task

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.staged_pipeline import spark_task
from tierflow.airflow_dags.task_helpers import fail_for_good, switch_param

SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "restore_segments.py"


def _optional(kind: str, title: str, description: str) -> Param:
    return Param(None, type=["null", kind], title=title, description=description)


@tierflow_dag(
    "partition_restore",
    schedule=None,
    doc_md=__doc__,
    tags=["tierflow", "tiered-storage", "restore"],
    params={
        "topic": Param("", type="string", minLength=1, title="Topic"),
        "partitions": Param(
            [],
            type="array",
            items={"type": "integer"},
            title="Partitions",
            description="Empty: every partition with a segment in remote storage.",
        ),
        "to": Param("", type="string", minLength=1, title="Target log dir"),
        "to_offset": _optional("integer", "To offset", "End with the batch holding it."),
        "to_timestamp": _optional(
            "integer", "To timestamp (ms)", "Stop with the segment reaching this time."
        ),
        "as_topic": _optional("string", "As topic", "Restore a copy under this name."),
        "dry_run": switch_param(
            True, "Dry run", "List segments, bytes and directories; write nothing."
        ),
    },
)
def partition_restore() -> None:
    @task
    def plan_restore() -> dict:
        from tierflow.restore.plan import RestoreError
        from tierflow.tasks.restore import plan_restore_batch

        with fail_for_good(RestoreError):  # a refused restore stays refused on retry
            context = get_current_context()
            return plan_restore_batch(dict(context["params"]), run_key=context["run_id"])

    @task.branch
    def choose_restore(batch: dict) -> list[str]:
        if batch["dry_run"]:
            return []
        return ["restore_with_spark" if batch["use_spark"] else "restore_in_worker"]

    @task
    def restore_in_worker(batch: dict) -> dict:
        from tierflow.tasks.restore import restore_in_worker as in_worker

        return in_worker(batch)

    @task(trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS)
    def finish_restore() -> dict:
        from tierflow.restore.plan import RestoreError
        from tierflow.tasks.attribution import attributed
        from tierflow.tasks.restore import finish_restore as finish

        with fail_for_good(RestoreError):  # rerun: clear the restore tasks with it
            context = get_current_context()  # the batch: not an upstream, so a dry run skips this
            batch = context["ti"].xcom_pull(task_ids="plan_restore")
            actor = attributed("airflow:partition_restore")
            return finish(dict(context["params"]), batch, actor=actor)

    batch = plan_restore()
    with_spark = spark_task("restore", "restore", SPARK_APP)
    in_worker = restore_in_worker(batch)
    choose_restore(batch) >> [with_spark, in_worker]
    [with_spark, in_worker] >> finish_restore()


partition_restore()
