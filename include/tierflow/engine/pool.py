"""A batch's jobs on every core of this machine, when it is not worth Spark's start-up: one
pool of spawned processes for the whole batch, whatever its partitions and shards.

Each process opens its storage once (``worker.executor_storage``) and runs jobs largest first
(``processes.on_cores``). Like a Spark job it writes no state: a process that dies (killed, out
of memory) turns its jobs into the kind's failed results, which finalize cleans up, and the
rerun does them again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial

from tierflow.engine.kind import Job, JobKind
from tierflow.engine.processes import on_cores
from tierflow.engine.worker import Worker, processes_for
from tierflow.faults import crash_point


def run_jobs(
    kind: JobKind[Job], jobs: Sequence[Job], worker: Worker, *, workers: int | None = None
) -> Iterator[tuple[Job, list[dict]]]:
    """Each job with its result rows, in the order they finish. ``workers`` None means
    TIERFLOW_WORKER_PROCESSES, or, where that is 0, one process per core for a big enough
    batch (processes.workers_for)."""
    return on_cores(
        partial(run_one, kind, worker),
        jobs,
        size=kind.size,
        workers=processes_for(worker.settings, workers),
        died=kind.died,
        what=kind.doing,
    )


def result_rows(
    kind: JobKind[Job], jobs: Sequence[Job], worker: Worker, *, workers: int | None = None
) -> Iterator[dict]:
    """Every job's result rows, in the order the jobs finish."""
    for _job, rows in run_jobs(kind, jobs, worker, workers=workers):
        yield from rows


def run_one(kind: JobKind[Job], worker: Worker, job: Job) -> list[dict]:
    """What a worker process runs per job (module level: spawned processes import it)."""
    crash_point(kind.worker_point)
    return kind.run(job, worker)
