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

from airflow.sdk import (
    Asset,
    AssetOrTimeSchedule,
    CronTriggerTimetable,
    Param,
    get_current_context,
    task,
)

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.spark_or_worker import spark_or_worker
from tierflow.airflow_dags.task_helpers import dry_run_param
from tierflow.assets import REMOTE_SEGMENTS

SPARK_APP = Path(__file__).resolve().parents[1] / "spark_apps" / "export_iceberg.py"


@tierflow_dag(
    "iceberg_export",
    schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("30 * * * *", timezone="UTC"),
        assets=[Asset(REMOTE_SEGMENTS)],
    ),
    doc_md=__doc__,
    tags=["tierflow", "tiered-storage", "iceberg", "spark"],
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
    @task
    def plan_export() -> dict:
        from tierflow.tasks.iceberg_export import plan_export_batch

        context = get_current_context()
        return plan_export_batch(dict(context["params"]), run_key=context["run_id"])

    spark_or_worker(
        "export",
        SPARK_APP,
        plan_export(),
        in_worker=_export_in_worker,
        finish=_commit_export,
        finish_id="commit_export",
    )


def _export_in_worker(batch: dict) -> dict:
    from tierflow.tasks.iceberg_export import export_in_worker

    return export_in_worker(batch)


def _commit_export(params: dict, batch: dict) -> dict:
    from tierflow.tasks.iceberg_export import commit_export

    return commit_export(batch)


iceberg_export()
