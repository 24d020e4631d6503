"""
### Iceberg export (tiered data as tables)

Turns each exported topic's remote segments into an Apache Iceberg table, `kafka.<topic>`, in
a SQL catalog in the metadata store's database, with its warehouse under the bucket's
`iceberg/` prefix. Topics opt in with `tierflow.iceberg.export=true`
(`tierflow topics register TOPIC --config tierflow.iceberg.export=true`).

* **When:** hourly, and whenever `segment_copy` finishes new remote segments (the
  `tierflow://remote-segments` Asset); or from the form, for one topic.
* **plan_export:** per exported topic, the partitions with tiered records past the table's
  last commit: one job each. Records are read as a `read_committed` consumer reads them (no
  control records, no aborted transaction), up to the first transaction whose marker is not
  tiered yet.
* **export_with_spark** (one Spark task per partition, through `spark_default`) or, below
  `TIERFLOW_SPARK_THRESHOLD_BYTES`, **export_in_worker**: Parquet files, one per segment and
  UTC day. No state is written, nothing is committed.
* **commit_export:** each topic's files registered in its table, with the offsets they hold,
  once per run.

**Safe to clear:** a cleared or killed run keeps its run id, so it commits once; files of a
run that never committed are deleted by the next plan. **Dry run** lists the partitions and
offsets to export and writes nothing.
"""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import Param

from tierflow.airflow_dags.defaults import cron_or_new_segments, tierflow_dag
from tierflow.airflow_dags.operations import export_operation
from tierflow.airflow_dags.spark_or_worker import spark_or_worker
from tierflow.airflow_dags.task_helpers import dry_run_param

SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "export_iceberg.py"


@tierflow_dag(
    schedule=cron_or_new_segments("30 * * * *"),
    tags=["tiered-storage", "iceberg", "spark"],
    params={
        "topic": Param(
            None,
            type=["null", "string"],
            title="Topic",
            description="Export only this topic. Empty: every topic with "
            "tierflow.iceberg.export=true.",
        ),
        "dry_run": dry_run_param("List the partitions and offsets to export; write nothing."),
    },
)
def iceberg_export() -> None:
    spark_or_worker(export_operation, verb="export", spark_app=SPARK_APP, finish_id="commit_export")


iceberg_export()
