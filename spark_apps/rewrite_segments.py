"""Spark job: transform and upload a batch of segments, one Spark task per segment.

Input: a JSON-lines file of RewriteJobs, written by the segment_copy DAG for segments it has
already marked COPY_SEGMENT_STARTED. Output: a JSON-lines file with one RewriteResult per
segment (object keys, sizes, sha256). The driver only reads the metadata store, to skip
segments that are no longer COPY_SEGMENT_STARTED (a cleared rerun); it never writes state.

Storage settings reach the executors inside the task closure, not on the command line. So do
the S3 connection details of an s3:// bucket: the Airflow task hands them to this driver in its
environment (``TIERFLOW_BUCKET_CLIENT``, see tierflow.storage.handover), and executors build a
plain boto3 client from them. Started by hand, the job uses boto3's own credential chain.

    spark-submit spark_apps/rewrite_segments.py --jobs jobs.jsonl --results results.jsonl
"""

from __future__ import annotations

from pathlib import Path

from tierflow.lifecycle.copy.rewrite import SEGMENT_REWRITE
from tierflow.metadata.store import MetadataStore
from tierflow.tasks.spark_driver import SparkApp, run_spark_app


def started_jobs(store: MetadataStore, path: Path) -> list:
    """The RewriteJobs of the file whose segments are still COPY_SEGMENT_STARTED."""
    from tierflow.tasks.segment_copy import load_jobs, still_started

    return still_started(store, load_jobs(path))


def summary(jobs: list, results: list[dict], failed: list[dict]) -> str:
    return f"rewrote {len(results) - len(failed)} of {len(results)} segments"


APP = SparkApp("rewrite-segments", "RewriteJobs", started_jobs, SEGMENT_REWRITE, summary)


if __name__ == "__main__":
    raise SystemExit(run_spark_app(APP, __doc__.splitlines()[0]))
