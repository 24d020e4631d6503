"""Spark job: merge diskless WAL batches into tiered segments, one Spark task per partition.

Input: a JSON-lines file of MergeJobs written by the diskless_merge DAG, one per partition,
whose segments it has already marked COPY_SEGMENT_STARTED; each lists the committed batches
below the cutoff in offset order (their WAL object, byte range and assigned offsets), rolled
into segments at segment.bytes. Each task reads those byte ranges from the WAL objects, injects
the assigned offsets, writes every segment's .log, .index, .timeindex and producer snapshot into
a staging directory and uploads them through the classic copy's rewrite (chunked, optionally
compressed and encrypted). A partition's segments are built in order, each producer snapshot
continuing the previous one; partitions run in parallel.

Output: a JSON-lines file with one RewriteResult per segment (object keys, sizes, sha256). The
driver only reads the metadata store, to skip segments that are no longer COPY_SEGMENT_STARTED
(a cleared rerun); it never writes state: Airflow verifies, records FINISHED and drops the
merged batches from the WAL.

    spark-submit spark_apps/merge_wal_segments.py --jobs jobs.jsonl --results results.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tierflow.config import Settings
from tierflow.diskless.merge_executor import merge_partitions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", required=True, type=Path, help="JSON lines of MergeJobs")
    parser.add_argument("--results", required=True, type=Path, help="where to write results")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession

    from tierflow.lifecycle.rewrite import write_json_lines
    from tierflow.runtime import open_store
    from tierflow.storage.factory import is_s3_url
    from tierflow.storage.s3_handover import take_handed_over
    from tierflow.tasks.diskless_merge import load_jobs, still_started

    settings = Settings.from_env()
    # From here on the connection details live in the task closure only.
    s3_client = take_handed_over() if is_s3_url(settings.remote_storage) else None
    # Read-only: the driver only checks which segments are still COPY_SEGMENT_STARTED.
    store = open_store(settings, migrate=False)
    jobs = [job for job in (still_started(store, j) for j in load_jobs(args.jobs)) if job]
    spark = SparkSession.builder.appName("tierflow-merge-wal-segments").getOrCreate()
    try:
        rows = [job.as_dict() for job in jobs]
        rdd = spark.sparkContext.parallelize(rows, numSlices=max(1, len(rows)))
        results = rdd.mapPartitions(
            lambda part: merge_partitions(settings, part, s3_client)
        ).collect()
    finally:
        spark.stop()
    write_json_lines(args.results, results)
    failed = [r for r in results if r["error"]]
    segments = sum(len(job.segments) for job in jobs)
    print(f"merged {len(results) - len(failed)} of {segments} segments from {len(jobs)} partitions")
    for result in failed:
        print(f"failed: {result['error']}")
    # Failures are reported per segment in the results; Airflow decides what they mean.
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
