"""Merging a batch of partitions on every core of this machine, when it is not worth Spark's
start-up: the worker path of the diskless_merge DAG.

One process per partition at a time (a partition's segments are built in order, each producer
snapshot continuing the previous one), one per core, the largest partitions first, as the
copy's rewrite pool does (tierflow.lifecycle.processes). Like the Spark job, it writes no
state: a process that dies fails its partition's first segment, which finalize cleans up, and
the rerun merges the partition again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from functools import partial

from tierflow.config import Settings
from tierflow.diskless.merge_executor import merge_partitions
from tierflow.diskless.merge_job import MergeJob
from tierflow.faults import crash_point
from tierflow.lifecycle.copy.rewrite import RewriteResult
from tierflow.lifecycle.processes import on_cores
from tierflow.storage.handover import BucketClient


def merge_jobs(
    jobs: Sequence[MergeJob],
    settings: Settings,
    *,
    bucket_client: BucketClient | None = None,
    workers: int | None = None,
) -> Iterator[RewriteResult]:
    """Every segment's result, partition by partition in the order they finish. ``workers``
    None means one process per core for a big enough batch (processes.workers_for)."""
    merge = partial(merge_one, settings, bucket_client)
    done = on_cores(
        merge, jobs, size=_size_of, workers=workers, died=_died, what="merging partitions"
    )
    for _job, raws in done:
        yield from (RewriteResult.from_dict(raw) for raw in raws)


def _size_of(job: MergeJob) -> int:
    return job.size_in_bytes


def _died(job: MergeJob, exc: BrokenProcessPool) -> list[dict]:
    first = job.segments[0].rewrite  # finalize discards every segment after a failed one
    error = f"{first.segment.describe()}: the process merging it died ({exc})"
    return [RewriteResult(first.segment_id, error=error).as_dict()]


def merge_one(settings: Settings, bucket_client: BucketClient | None, job: MergeJob) -> list[dict]:
    """What one worker process runs per partition (module level: spawned processes find it
    by importing this module)."""
    crash_point("merge.worker")
    return list(merge_partitions(settings, [job.as_dict()], bucket_client))
