"""
### Remote compaction (compacted topics in tiered storage)

Compacts the tiered segments of topics with `cleanup.policy=compact` (or `compact,delete`)
as Kafka's log cleaner compacts a log, nightly, on Spark.

* **Which partitions** (plan, one task): those whose cleanable range is due by Kafka's rules:
  the dirty ratio reaches `min.cleanable.dirty.ratio`, or the first dirty segment is older than
  `max.compaction.lag.ms`. The range never includes the head still on the broker (offsets from
  the local log start) nor segments younger than `min.compaction.lag.ms`, nor a transaction
  whose marker is not tiered yet. **Force** takes every partition with a cleanable range.
  Partitions an interrupted run left half swapped are always taken.
* **prepare** (per shard, pool `tierflow_compaction`): per partition, take its copy lease,
  delete what killed attempts left, finish an interrupted swap, and record each group's new
  segment (consecutive segments up to `segment.bytes`) COPY_SEGMENT_STARTED.
* **compact** (one batch): read every segment of the ranges through the ranged-read path, keep
  each key's latest record (a shuffle by key), drop tombstones older than
  `delete.retention.ms` and aborted transactions, and write each group's segment with its
  indexes: the PySpark job `spark_apps/compact_segments.py`, or below
  `TIERFLOW_SPARK_THRESHOLD_BYTES` the same code in the worker. No state is written.
* **finalize** (per shard): verify each new segment, record it COPY_SEGMENT_FINISHED, move the
  partition's clean section, and only then delete the segments it replaced.

Readers see one complete log at every moment: never a key twice, never a key lost.
**Safe to clear:** any task, with its downstream tasks; a killed run is finished by the next.
**Dry run:** lists the groups each partition would get and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import Param

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.operations import compaction_operation
from tierflow.airflow_dags.staged_pipeline import wire_staged_pipeline
from tierflow.airflow_dags.task_helpers import dry_run_param, switch_param

SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "compact_segments.py"


@tierflow_dag(
    schedule="0 3 * * *",
    tags=["tiered-storage", "compaction", "spark"],
    params={
        "topic": Param("", type="string", title="Topic", description="Empty: every topic."),
        "force": switch_param(
            False, "Force", "Compact every cleanable range, whatever its dirty ratio."
        ),
        "dry_run": dry_run_param("Change nothing; list the groups each partition would get."),
    },
)
def remote_compaction() -> None:
    wire_staged_pipeline(
        operation=compaction_operation,
        verb="compact",
        pool="tierflow_compaction",
        spark_app=SPARK_APP,
    )


remote_compaction()
