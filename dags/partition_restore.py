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

**Dry run** (on by default): the task log lists the segments, bytes and target directories, and
nothing is written. A failed or killed task, cleared, continues where it stopped; a finished
restore run again changes nothing. Every restore is in the event history, with this task
instance as its actor.
"""

from __future__ import annotations

from airflow.sdk import Param, get_current_context, task

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.task_helpers import fail_for_good, switch_param


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
    def restore() -> dict:
        from tierflow.restore.plan import RestoreError
        from tierflow.tasks.attribution import attributed
        from tierflow.tasks.restore import restore_from_form

        with fail_for_good(RestoreError):  # a refused restore stays refused on retry
            params = dict(get_current_context()["params"])
            return restore_from_form(params, actor=attributed("airflow:partition_restore"))

    restore()


partition_restore()
