"""Spark job: tiered segments as Iceberg data files, one Spark task per partition.

Input: a JSON-lines file of ExportJobs written by the iceberg_export DAG, one per partition
with new tiered records: its finished remote segments in offset order and the offset to start
from. Each task reads the segments through the ranged-read path (decrypted, decompressed),
keeps what a read_committed consumer reads (no control records, no aborted transaction, up to
the first transaction whose marker is not tiered yet) and writes it as Parquet, one file per
segment and UTC day, under the run's own directory of the table's data.

Output: a JSON-lines file with one result per job (the files, the offsets they cover, the
records). The job writes no metadata state and commits nothing: Airflow registers the files in
the Iceberg table, once per run.

    spark-submit spark_apps/export_iceberg.py --jobs jobs.jsonl --results results.jsonl
"""

from __future__ import annotations

from pathlib import Path

from tierflow.engine.json_lines import read_json_lines
from tierflow.export.job import PARTITION_EXPORT, ExportJob
from tierflow.metadata.store import MetadataStore
from tierflow.tasks.spark_driver import SparkApp, run_spark_app


def planned_jobs(store: MetadataStore, path: Path) -> list[ExportJob]:
    """Every job of the file: the plan chose them, and a rerun writes them again."""
    return [PARTITION_EXPORT.load(row) for row in read_json_lines(path)]


def summary(jobs: list, results: list[dict], failed: list[dict]) -> str:
    records = sum(r.get("records", 0) for r in results if not r["error"])
    return f"exported {records} records from {len(jobs)} partitions ({len(failed)} failed)"


APP = SparkApp("export-iceberg", "ExportJobs", planned_jobs, PARTITION_EXPORT, summary)


if __name__ == "__main__":
    raise SystemExit(run_spark_app(APP, __doc__.splitlines()[0]))
