"""Spark job: compact the tiered segments of compacted topics, Kafka's cleaner as a shuffle.

Input: a JSON-lines file of CompactionJobs written by the remote_compaction DAG, one per
partition, whose groups' new segments it has already marked COPY_SEGMENT_STARTED. Two stages:

1. one Spark task per source segment reads it through the ranged-read path and builds its
   latest record per key; the records meet their keys' others in a shuffle (reduce by
   (partition, key) to the highest offset), and the offsets that stay (tombstones older than
   delete.retention.ms do not) come back per partition;
2. one Spark task per group streams its staying batches, whole or rebuilt with their
   producer fields, into the upload of its new segment, with the indexes built on the way.

Output: a JSON-lines file with one CompactionResult per group. The driver never writes state
(it only reads transaction indexes from the bucket): Airflow verifies, records FINISHED and
deletes the replaced segments.

    spark-submit spark_apps/compact_segments.py --jobs jobs.jsonl --results results.jsonl
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from pathlib import Path

from tierflow.engine.json_lines import read_json_lines
from tierflow.engine.worker import Worker
from tierflow.lifecycle.compaction.job import CompactionJob
from tierflow.lifecycle.compaction.offset_map import KeptOffsets, later, stays
from tierflow.lifecycle.compaction.passes import (
    PARTITION_COMPACTION,
    aborted_in,
    scan_source,
    without_map,
    write_group,
)
from tierflow.lifecycle.remote_log import remote_aborted
from tierflow.metadata.store import MetadataStore
from tierflow.tasks.spark_driver import SparkApp, run_spark_app

NONE_KEPT = KeptOffsets(())


def load_jobs(_store: MetadataStore, path: Path) -> list[CompactionJob]:
    """Every job of the file: finalize settles each group whatever became of its segment."""
    return [CompactionJob.from_dict(raw) for raw in read_json_lines(path)]


def stages(spark, settings, rows: list[dict], bucket_client) -> list[dict]:
    """Scan and shuffle, then write each group: one result per group."""
    sc = spark.sparkContext
    jobs = [CompactionJob.from_dict(raw) for raw in rows]
    worker = Worker(settings, bucket_client)
    aborted = [remote_aborted(worker.rsm, [*job.sources, *job.later]) for job in jobs]
    sources = [
        (i, asdict(s), aborted_in(aborted[i], s)) for i, job in enumerate(jobs) for s in job.sources
    ]
    scans = sc.parallelize(sources, max(1, len(sources)))
    scans = scans.map(lambda item: scan_source(worker, item)).cache()
    horizons = [job.tombstone_horizon_ms for job in jobs]
    staying = (
        scans.flatMap(lambda s: (((s[0], key), latest) for key, latest in s[2].latest.items()))
        .reduceByKey(later)
        .filter(lambda kv: stays(kv[1], horizons[kv[0][0]]))
        .map(lambda kv: (kv[0][0], kv[1].offset))
        .collect()
    )
    offsets: dict[int, list[int]] = defaultdict(list)
    for index, offset in staying:
        offsets[index].append(offset)
    kept = {index: KeptOffsets(found) for index, found in offsets.items()}
    flags = dict(scans.map(lambda s: (s[1], without_map(s[2]))).collect())
    groups = [
        (
            i,
            (
                job.as_dict(),
                g,
                {s.segment_id: flags[s.segment_id] for s in group.sources},
                aborted[i],
            ),
        )
        for i, job in enumerate(jobs)
        for g, group in enumerate(job.groups)
    ]
    shared = sc.broadcast(kept)
    written = sc.parallelize(groups, max(1, len(groups)))
    return written.map(
        lambda pair: write_group(worker, pair[1], shared.value.get(pair[0], NONE_KEPT))
    ).collect()


def summary(jobs: list, results: list[dict], failed: list[dict]) -> str:
    outcomes = defaultdict(int)
    for result in results:
        outcomes[result["outcome"]] += 1
    done = ", ".join(f"{n} {outcome}" for outcome, n in sorted(outcomes.items()))
    return f"compacted {len(jobs)} partitions: {len(results)} groups ({done or 'none'})"


APP = SparkApp(
    "compact-segments", "CompactionJobs", load_jobs, PARTITION_COMPACTION, summary, stages
)


if __name__ == "__main__":
    raise SystemExit(run_spark_app(APP, __doc__.splitlines()[0]))
