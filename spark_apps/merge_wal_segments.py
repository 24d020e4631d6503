"""Spark job: merge diskless WAL batches into tiered segments, one Spark task per partition.

Input: a JSON-lines file of MergeJobs written by the diskless_merge DAG, one per partition,
whose segments it has already marked COPY_SEGMENT_STARTED; each lists the committed batches
below the cutoff in offset order (their WAL object, byte range and assigned offsets), rolled
into segments at segment.bytes. Each task reads those byte ranges from the WAL objects, injects
the assigned offsets and streams every segment into the upload (chunked, optionally compressed
and encrypted, as the classic copy uploads), building its .index, .timeindex and producer
snapshot on the way; nothing is staged on local disk. A partition's segments are built in
order, each producer snapshot continuing the previous one; partitions run in parallel.

Output: a JSON-lines file with one RewriteResult per segment (object keys, sizes, sha256). The
driver only reads the metadata store, to skip segments that are no longer COPY_SEGMENT_STARTED
(a cleared rerun); it never writes state: Airflow verifies, records FINISHED and drops the
merged batches from the WAL.

    spark-submit spark_apps/merge_wal_segments.py --jobs jobs.jsonl --results results.jsonl
"""

from __future__ import annotations

from pathlib import Path

from tierflow.diskless.merge_job import WAL_MERGE
from tierflow.metadata.store import MetadataStore
from tierflow.tasks.spark_driver import SparkApp, run_spark_app


def started_jobs(store: MetadataStore, path: Path) -> list:
    """The MergeJobs of the file, each cut to its segments still COPY_SEGMENT_STARTED."""
    from tierflow.tasks.diskless_merge import load_jobs, still_started

    return [job for job in (still_started(store, j) for j in load_jobs(path)) if job]


def summary(jobs: list, results: list[dict], failed: list[dict]) -> str:
    segments = sum(len(job.segments) for job in jobs)
    return f"merged {len(results) - len(failed)} of {segments} segments from {len(jobs)} partitions"


APP = SparkApp("merge-wal-segments", "MergeJobs", started_jobs, WAL_MERGE, summary)


if __name__ == "__main__":
    raise SystemExit(run_spark_app(APP, __doc__.splitlines()[0]))
