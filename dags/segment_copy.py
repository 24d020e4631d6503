"""
### Segment copy (KIP-405)

Copies rolled log segments of every tiered partition from the leaders' log directories to
remote storage, as Kafka's RLMCopyTask does.

* **Eligible:** topics registered with `remote.storage.enable=true` and tiered state ENABLED.
* **Which segments:** from max(highest remote offset + 1, log start offset), every segment
  whose next segment starts at or below the last stable offset; never the active segment.
* **plan** (one task): lists every leader's partitions and keeps those with something to copy
  (or an unfinished attempt to clean up), cut into at most `TIERFLOW_MAX_SHARDS` shards by
  broker and bytes. An idle partition costs a directory listing, never a task.
* **prepare** (one task per shard): per partition, take its lease, delete what killed
  attempts left, check each segment and record it COPY_SEGMENT_STARTED.
* **rewrite** (one batch): chunk, compress, encrypt and upload every segment, one Spark task
  per segment (`rewrite_with_spark`, through the `spark_default` connection) or, below
  `TIERFLOW_SPARK_THRESHOLD_BYTES`, in the worker (`rewrite_in_worker`). No state is written.
  An S3 bucket is reached through `TIERFLOW_AWS_CONN_ID` (`aws_default`); Spark's driver gets
  the connection in its environment only, never as an argument, template or XCom.
* **finalize** (one task per shard): per partition, verify every object, record
  COPY_SEGMENT_FINISHED in offset order, release the lease.

**Safe to clear:** a shard whose partitions partly failed finishes the others and then fails,
naming each failed partition; clear it (with its downstream tasks) and the rerun finishes the
job. Rewrites skip segments that are no longer COPY_SEGMENT_STARTED, finalizing treats FINISHED
segments as done, and the next prepare deletes any half-done attempt.

Pools: `tierflow_copy` bounds shard tasks, `tierflow_spark` the Spark jobs
(`airflow_settings.yaml`).
"""

from __future__ import annotations

from pathlib import Path

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.operations import copy_operation
from tierflow.airflow_dags.staged_pipeline import wire_staged_pipeline

SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "rewrite_segments.py"
# A partition lease outlives a killed task by TIERFLOW_COPY_LEASE_TTL_S (the prepare task reads
# it from the settings); a cleared rerun takes it over at once.


@tierflow_dag(
    schedule="*/5 * * * *",
    tags=["tiered-storage", "copy", "spark"],
)
def segment_copy() -> None:
    wire_staged_pipeline(
        operation=copy_operation,
        verb="rewrite",
        pool="tierflow_copy",
        spark_app=SPARK_APP,
    )


segment_copy()
