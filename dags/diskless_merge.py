"""
### Diskless merge (KIP-1163 consolidation)

Moves the older batches of consolidated diskless topics (diskless, with
`remote.storage.enable=true`) out of the shared WAL objects into ordinary tiered segments,
every 15 minutes.

* **Which batches:** per partition, the WAL's oldest batches committed at least `min_age_minutes`
  ago, in offset order, rolled into segments at `segment_bytes` (at most
  `max_segments_per_partition` per run; a backlog is worked off over several runs).
* **plan** (one task): the partitions to merge, cut into at most `TIERFLOW_MAX_SHARDS` shards.
* **prepare** (one task per shard, pool `tierflow_diskless`): per partition, take its copy
  lease, delete what killed attempts left, drop batches a finished segment already holds,
  record each new segment COPY_SEGMENT_STARTED.
* **merge** (one batch): read the batches' byte ranges from the WAL objects, inject their
  offsets, write .log, .index, .timeindex and the producer snapshot, then chunk, compress,
  encrypt and upload like any tiered segment: the PySpark job
  `spark_apps/merge_wal_segments.py` (one Spark task per partition, pool `tierflow_spark`), or
  below `TIERFLOW_SPARK_THRESHOLD_BYTES` the same code in the worker. No state is written.
* **finalize** (one task per shard): per partition, verify every object, record
  COPY_SEGMENT_FINISHED in offset order, then drop those batches from the WAL: objects' used
  sizes shrink and emptied objects wait `TIERFLOW_DISKLESS_DELETE_GRACE_MS` for the
  `diskless_gc` DAG.

Reads of merged offsets go to the tiered segments, byte for byte the same batches.
**Safe to clear:** any task, with its downstream tasks; a rerun neither loses nor duplicates
a batch. **Dry run:** lists the segments each partition would get and changes nothing.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import Param

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.operations import merge_operation
from tierflow.airflow_dags.staged_pipeline import wire_staged_pipeline
from tierflow.airflow_dags.task_helpers import dry_run_param

SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "merge_wal_segments.py"


@tierflow_dag(
    schedule="*/15 * * * *",
    tags=["diskless", "tiered-storage", "spark"],
    params={
        "min_age_minutes": Param(60, type="integer", minimum=0, title="Merge batches older than"),
        "topic": Param("", type="string", title="Topic", description="Empty: every topic."),
        "segment_bytes": Param(1 << 30, type="integer", minimum=1, title="segment.bytes"),
        "max_segments_per_partition": Param(8, type="integer", minimum=0, title="0: no limit"),
        "dry_run": dry_run_param("Change nothing."),
    },
)
def diskless_merge() -> None:
    wire_staged_pipeline(
        operation=merge_operation,
        verb="merge",
        pool="tierflow_diskless",
        spark_app=SPARK_APP,
    )


diskless_merge()
