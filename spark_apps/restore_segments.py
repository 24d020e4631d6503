"""Spark job: write remote segments back as the files a broker keeps, one Spark task per segment.

Input: a JSON-lines file of RestoreSegmentJobs, written by the partition_restore DAG (or
``tierflow restore`` above ``TIERFLOW_SPARK_THRESHOLD_BYTES``) once every target directory was
checked. Each task checks its segment's objects against the size and sha256 the copy recorded,
reads it through the ranged-read path (decrypt, decompress) and writes its indexes, producer
snapshot and ``.log`` into the partition's staging directory under temporary names, fsyncs and
renames them; a segment whose ``.log`` is already complete there is skipped, so a retried task
or a rerun writes only what is missing. Output: a JSON-lines file with one result per segment
(its id, whether it was written, the error if any: one line naming the object).

The job writes no metadata state, reads none, and never touches a target: the caller moves
each partition whose segments were all written into place and records the restore.

    spark-submit spark_apps/restore_segments.py --jobs jobs.jsonl --results results.jsonl
"""

from __future__ import annotations

from pathlib import Path

from tierflow.engine.json_lines import read_json_lines
from tierflow.metadata.store import MetadataStore
from tierflow.restore.segment_job import SEGMENT_RESTORE, RestoreSegmentJob
from tierflow.tasks.spark_driver import SparkApp, run_spark_app


def planned_jobs(store: MetadataStore, path: Path) -> list[RestoreSegmentJob]:
    """Every job of the file: the plan checked the targets, and each task skips what is done."""
    return [SEGMENT_RESTORE.load(row) for row in read_json_lines(path)]


def summary(jobs: list, results: list[dict], failed: list[dict]) -> str:
    written = sum(1 for r in results if r.get("written"))
    return f"restored {written} of {len(jobs)} segments ({len(failed)} failed)"


APP = SparkApp("restore-segments", "RestoreSegmentJobs", planned_jobs, SEGMENT_RESTORE, summary)


if __name__ == "__main__":
    raise SystemExit(run_spark_app(APP, __doc__.splitlines()[0]))
