"""Rewriting a batch of segments on every core of this machine, when it is not worth Spark's
start-up: the worker path of the staged copy, and ``tierflow copy``.

Processes, not threads: zstd, AES-GCM and the sha256 each hold the GIL for part of their work,
so threads top out near one core. Each process opens its storage once (``executor_storage``,
as a Spark worker does) and takes the largest segments first, so the last segments to finish
are small ones and no core idles for long at the end. Like the Spark job, it writes no state:
a worker that dies (killed, out of memory) turns its segments into failed results, which
finalize cleans up and the rerun copies again.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool

from tierflow.config import Settings
from tierflow.faults import crash_point
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult
from tierflow.lifecycle.copy.rewrite_executor import rewrite_partition
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.storage.s3_handover import S3ClientSpec

log = logging.getLogger(__name__)

# Below this a batch is rewritten in this process: starting the workers (a fresh interpreter
# each, importing tierflow) costs more than the parallelism saves.
PARALLEL_MIN_BYTES = 32 << 20


def default_workers() -> int:
    """One process per core this process may run on."""
    return max(1, len(os.sched_getaffinity(0)))


def rewrite_jobs(
    jobs: Sequence[RewriteJob],
    settings: Settings,
    *,
    s3_client: S3ClientSpec | None = None,
    workers: int | None = None,
    min_parallel_bytes: int = PARALLEL_MIN_BYTES,
    progress: Progress = NO_PROGRESS,
) -> Iterator[RewriteResult]:
    """One result per job, in the order they finish; ``progress`` hears of each. ``workers``
    None means one process per core, for a batch of at least ``min_parallel_bytes``."""
    total = sum(job.size_in_bytes for job in jobs)
    if workers is None:
        workers = default_workers() if total >= min_parallel_bytes else 1
    workers = min(workers, len(jobs))
    if workers <= 1:
        runner = _in_this_process(jobs, settings, s3_client)
    else:
        log.info("rewriting %d segments (%d bytes) in %d processes", len(jobs), total, workers)
        runner = _in_processes(jobs, settings, s3_client, workers)
    for job, result in runner:
        progress.advance(1, job.size_in_bytes)
        yield result
        crash_point("copy.after_upload")


def _in_this_process(
    jobs: Sequence[RewriteJob], settings: Settings, s3_client: S3ClientSpec | None
) -> Iterator[tuple[RewriteJob, RewriteResult]]:
    for job in jobs:
        yield job, RewriteResult.from_dict(rewrite_one(settings, job.as_dict(), s3_client))


def _in_processes(
    jobs: Sequence[RewriteJob], settings: Settings, s3_client: S3ClientSpec | None, workers: int
) -> Iterator[tuple[RewriteJob, RewriteResult]]:
    # spawn, not fork: an Airflow task or a Spark driver may hold threads and locks a fork
    # would copy in whatever state they were.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        largest_first = sorted(jobs, key=lambda job: job.size_in_bytes, reverse=True)
        futures: dict[Future, RewriteJob] = {
            pool.submit(rewrite_one, settings, job.as_dict(), s3_client): job
            for job in largest_first
        }
        for future in as_completed(futures):
            job = futures[future]
            yield job, _outcome(job, future)


def _outcome(job: RewriteJob, future: Future) -> RewriteResult:
    try:
        return RewriteResult.from_dict(future.result())
    except BrokenProcessPool as exc:
        return RewriteResult(
            job.segment_id,
            error=f"{job.segment.describe()}: the process rewriting it died ({exc})",
        )


def rewrite_one(settings: Settings, row: dict, s3_client: S3ClientSpec | None) -> dict:
    """What one worker process runs per segment (a module-level function: spawned processes
    find it by importing this module)."""
    crash_point("copy.rewrite_worker")
    (result,) = rewrite_partition(settings, [row], s3_client)
    return result
