"""Spark job: transform and upload a batch of segments, one Spark task per segment.

Input: a JSON-lines file of RewriteJobs, written by the segment_copy DAG for segments it has
already marked COPY_SEGMENT_STARTED. Output: a JSON-lines file with one RewriteResult per
segment (object keys, sizes, sha256). The driver only reads the metadata store, to skip
segments that are no longer COPY_SEGMENT_STARTED (a cleared rerun); it never writes state.

Storage settings reach the executors inside the task closure, not on the command line. So do
the S3 connection details of an s3:// bucket: the Airflow task hands them to this driver in its
environment (``TIERFLOW_S3_CLIENT``, see tierflow.storage.s3_handover), and executors build a
plain boto3 client from them. Started by hand, the job uses boto3's own credential chain.

    spark-submit spark_apps/rewrite_segments.py --jobs jobs.jsonl --results results.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tierflow.config import Settings
from tierflow.lifecycle.rewrite_executor import rewrite_partition


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", required=True, type=Path, help="JSON lines of RewriteJobs")
    parser.add_argument("--results", required=True, type=Path, help="where to write results")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    from tierflow.lifecycle.rewrite import write_json_lines
    from tierflow.runtime import open_store
    from tierflow.storage.factory import is_s3_url
    from tierflow.storage.s3_handover import take_handed_over
    from tierflow.tasks.segment_copy import load_jobs, still_started

    settings = Settings.from_env()
    # From here on the connection details live in the task closure only.
    s3_client = take_handed_over() if is_s3_url(settings.remote_storage) else None
    # Read-only: the driver only checks which segments are still COPY_SEGMENT_STARTED.
    jobs = still_started(open_store(settings, migrate=False), load_jobs(args.jobs))
    spark = SparkSession.builder.appName("tierflow-rewrite-segments").getOrCreate()
    try:
        rows = [job.as_dict() for job in jobs]
        rdd = spark.sparkContext.parallelize(rows, numSlices=max(1, len(rows)))
        results = rdd.mapPartitions(
            lambda part: rewrite_partition(settings, part, s3_client)
        ).collect()
    finally:
        spark.stop()
    write_json_lines(args.results, results)
    failed = [r for r in results if r["error"]]
    print(f"rewrote {len(results) - len(failed)} of {len(results)} segments")
    for result in failed:
        print(f"failed: {result['error']}")
    # Failures are reported per segment in the results; Airflow decides what they mean.
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
