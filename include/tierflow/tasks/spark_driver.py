"""The driver side every tierflow Spark app shares: read a jobs file, run Spark over it, write
the results file.

The apps in ``spark_apps/`` only say what differs (how a jobs file is read and filtered, what
an executor runs per Spark partition, the line that sums up the run). spark-submit ships the
tierflow package as ``--py-files``, so the driver imports this module from there.

A Spark app never changes metadata state: the driver only reads the store, to skip segments
that are no longer COPY_SEGMENT_STARTED (a cleared rerun); Airflow verifies and records
FINISHED. Failures are reported per segment in the results; Airflow decides what they mean.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tierflow.config import Settings
from tierflow.engine.kind import JobKind, run_rows
from tierflow.engine.worker import Worker
from tierflow.metadata.store import MetadataStore
from tierflow.storage.handover import BucketClient


@dataclass(frozen=True)
class SparkApp:
    """What one Spark app adds to the shared driver."""

    name: str  # the Spark application is named tierflow-<name>
    job_type: str  # what each line of the --jobs file holds, for --help
    # The jobs still to run: read from the file, filtered against the (read-only) store.
    started_jobs: Callable[[MetadataStore, Path], Sequence[Any]]
    # What an executor runs per job row (engine.kind), one Spark task per row.
    kind: JobKind[Any]
    # The line summing up the run, from the jobs, all results and the failed ones.
    summary: Callable[[Sequence[Any], list[dict], list[dict]], str]
    # An app with stages of its own (the compaction's shuffle) runs them on the session;
    # by default one Spark task per job row runs ``kind``.
    stages: Callable[[Any, Settings, list[dict], BucketClient | None], list[dict]] | None = None


def run_spark_app(app: SparkApp, description: str, argv: list[str] | None = None) -> int:
    """Parse --jobs/--results, run the jobs on Spark, write and print the results."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--jobs", required=True, type=Path, help=f"JSON lines of {app.job_type}")
    parser.add_argument("--results", required=True, type=Path, help="where to write results")
    args = parser.parse_args(argv)

    from tierflow.engine.json_lines import write_json_lines
    from tierflow.runtime import open_store
    from tierflow.storage.handover import take_handed_over

    settings = Settings.from_env()
    # From here on the connection details live in the task closure only.
    bucket_client = take_handed_over(settings)
    # Read-only: the driver only checks which segments are still COPY_SEGMENT_STARTED.
    jobs = app.started_jobs(open_store(settings, migrate=False), args.jobs)
    results = _run_on_spark(app, settings, [job.as_dict() for job in jobs], bucket_client)
    write_json_lines(args.results, results)
    failed = [r for r in results if r["error"]]
    print(app.summary(jobs, results, failed))
    for result in failed:
        print(f"failed: {result['error']}")
    # Failures are reported per segment in the results; Airflow decides what they mean.
    return 0


def _run_on_spark(
    app: SparkApp, settings: Settings, rows: list[dict], bucket_client: BucketClient | None
) -> list[dict]:
    """One Spark task per job row (or the app's own stages); the settings and S3 spec travel
    in the task closure."""
    from pyspark.sql import SparkSession

    kind, worker = app.kind, Worker(settings, bucket_client)
    spark = SparkSession.builder.appName(f"tierflow-{app.name}").getOrCreate()
    try:
        if app.stages is not None:
            return app.stages(spark, settings, rows, bucket_client)
        rdd = spark.sparkContext.parallelize(rows, numSlices=max(1, len(rows)))
        return rdd.mapPartitions(lambda part: run_rows(kind, worker, part)).collect()
    finally:
        spark.stop()
