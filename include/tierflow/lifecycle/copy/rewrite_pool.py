"""Rewriting a batch of segments on every core of this machine, when it is not worth Spark's
start-up: the worker path of the staged copy, and ``tierflow copy``.

One process per core (tierflow.lifecycle.processes), largest segments first; each opens its
storage once (``executor_storage``, as a Spark worker does). Like the Spark job, it writes no state:
a worker that dies (killed, out of memory) turns its segments into failed results, which
finalize cleans up and the rerun copies again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from functools import partial

from tierflow.config import Settings
from tierflow.faults import crash_point
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult
from tierflow.lifecycle.copy.rewrite_executor import rewrite_partition
from tierflow.lifecycle.processes import largest_first, workers_for
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.storage.s3_handover import S3ClientSpec

log = logging.getLogger(__name__)


def rewrite_jobs(
    jobs: Sequence[RewriteJob],
    settings: Settings,
    *,
    s3_client: S3ClientSpec | None = None,
    workers: int | None = None,
    progress: Progress = NO_PROGRESS,
) -> Iterator[RewriteResult]:
    """One result per job, in the order they finish; ``progress`` hears of each. ``workers``
    None means one process per core for a big enough batch (processes.workers_for)."""
    total = sum(job.size_in_bytes for job in jobs)
    rewrite = partial(rewrite_one, settings, s3_client)
    count = workers_for(total, len(jobs), workers)
    if count <= 1:
        runner = ((job, RewriteResult.from_dict(rewrite(job))) for job in jobs)
    else:
        log.info("rewriting %d segments (%d bytes) in %d processes", len(jobs), total, count)
        done = largest_first(rewrite, jobs, size=_size_of, workers=count)
        runner = ((job, _outcome(job, future)) for job, future in done)
    for job, result in runner:
        progress.advance(1, job.size_in_bytes)
        yield result
        crash_point("copy.after_upload")


def _size_of(job: RewriteJob) -> int:
    return job.size_in_bytes


def _outcome(job: RewriteJob, future: Future) -> RewriteResult:
    try:
        return RewriteResult.from_dict(future.result())
    except BrokenProcessPool as exc:
        return RewriteResult(
            job.segment_id,
            error=f"{job.segment.describe()}: the process rewriting it died ({exc})",
        )


def rewrite_one(settings: Settings, s3_client: S3ClientSpec | None, job: RewriteJob) -> dict:
    """What one worker process runs per segment (a module-level function: spawned processes
    find it by importing this module)."""
    crash_point("copy.rewrite_worker")
    (result,) = rewrite_partition(settings, [job.as_dict()], s3_client)
    return result
