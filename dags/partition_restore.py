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
code, into each partition's staging directory (`.<topic>-<partition>.restore-staging`), after
checking every object against what its copy recorded; neither writes metadata state nor
touches a target. **finish_restore** moves each partition whose segments were all written
into place, whole, and records it; a partition with a corrupt object fails in one line naming
the key, its target left as it was.

**Dry run** (on by default): plan_restore's log lists the segments, bytes and target
directories, and nothing is written. A failed or killed task, cleared, continues where it
stopped; a finished restore run again says "already restored" and changes and records
nothing. Every restore is in the event history, with finish_restore's task instance as its
actor.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import Param

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.operations import restore_operation
from tierflow.airflow_dags.spark_or_worker import spark_or_worker
from tierflow.airflow_dags.task_helpers import optional_param, switch_param

SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "restore_segments.py"


@tierflow_dag(
    schedule=None,
    tags=["tiered-storage", "restore"],
    params={
        "topic": Param("", type="string", minLength=1, title="Topic"),
        "partitions": Param(
            [],
            type="array",
            items={"type": "integer", "minimum": 0},
            title="Partitions",
            description="Empty: every partition with a segment in remote storage.",
        ),
        "to": Param("", type="string", minLength=1, title="Target log dir"),
        "to_offset": optional_param(
            "integer", "To offset", "End with the batch holding it.", minimum=0
        ),
        "to_timestamp": optional_param(
            "integer", "To timestamp (ms)", "Stop with the segment reaching this time.", minimum=0
        ),
        "as_topic": optional_param("string", "As topic", "Restore a copy under this name."),
        "dry_run": switch_param(
            True, "Dry run", "List segments, bytes and directories; write nothing."
        ),
    },
)
def partition_restore() -> None:
    spark_or_worker(
        restore_operation, verb="restore", spark_app=SPARK_APP, finish_id="finish_restore"
    )


partition_restore()
