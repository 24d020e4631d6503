"""Rewriting a batch of segments on every core of this machine, when it is not worth Spark's
start-up: the worker path of the staged copy, and ``tierflow copy``.

One process per core (tierflow.lifecycle.processes), largest segments first; each opens its
storage once (``executor_storage``, as a Spark worker does). Like the Spark job, it writes no state:
a worker that dies (killed, out of memory) turns its segments into failed results, which
finalize cleans up and the rerun copies again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from functools import partial

from tierflow.config import Settings
from tierflow.faults import crash_point
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult
from tierflow.lifecycle.copy.rewrite_executor import rewrite_partition
from tierflow.lifecycle.processes import on_cores
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.storage.handover import BucketClient


def rewrite_jobs(
    jobs: Sequence[RewriteJob],
    settings: Settings,
    *,
    bucket_client: BucketClient | None = None,
    workers: int | None = None,
    progress: Progress = NO_PROGRESS,
) -> Iterator[RewriteResult]:
    """One result per job, in the order they finish; ``progress`` hears of each. ``workers``
    None means one process per core for a big enough batch (processes.workers_for)."""
    rewrite = partial(rewrite_one, settings, bucket_client)
    done = on_cores(
        rewrite, jobs, size=_size_of, workers=workers, died=_died, what="rewriting segments"
    )
    for job, raw in done:
        progress.advance(1, job.size_in_bytes)
        yield RewriteResult.from_dict(raw)
        crash_point("copy.after_upload")


def _size_of(job: RewriteJob) -> int:
    return job.size_in_bytes


def _died(job: RewriteJob, exc: BrokenProcessPool) -> dict:
    error = f"{job.segment.describe()}: the process rewriting it died ({exc})"
    return RewriteResult(job.segment_id, error=error).as_dict()


def rewrite_one(settings: Settings, bucket_client: BucketClient | None, job: RewriteJob) -> dict:
    """What one worker process runs per segment (a module-level function: spawned processes
    find it by importing this module)."""
    crash_point("copy.rewrite_worker")
    (result,) = rewrite_partition(settings, [job.as_dict()], bucket_client)
    return result
