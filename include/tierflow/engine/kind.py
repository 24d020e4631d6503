"""What one kind of job does on a worker core: the part of an operation that Spark's executors
and the engine's processes run alike.

A kind is a module-level object of a module-level class, so spawned processes and Spark's
executors unpickle it by importing its module. It turns a job's JSON row into the typed job,
runs it against the worker's storage, and reports one result row per segment it touched; a
failure becomes a result row, never an exception, so one bad job does not take the others
of its batch down with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

from tierflow.engine.worker import Worker

Job = TypeVar("Job")


class JobKind(Protocol[Job]):
    """How jobs of one kind are read, sized and run on a worker."""

    # For the log: "rewriting segments", "merging partitions", ...
    doing: str
    # The crash point (tierflow.faults) a worker process passes before each job.
    worker_point: str

    def load(self, row: dict) -> Job: ...

    def size(self, job: Job) -> int: ...

    def run(self, job: Job, worker: Worker) -> list[dict]:
        """The job's result rows; failures are rows with an ``error``."""
        ...

    def died(self, job: Job, exc: BaseException) -> list[dict]:
        """The result rows of a job whose process died (killed, out of memory)."""
        ...


def run_rows(kind: JobKind[Job], worker: Worker, rows: Iterable[dict]) -> Iterator[dict]:
    """The result rows of ``rows``, in order: what one Spark task runs over its partition."""
    for row in rows:
        yield from kind.run(kind.load(row), worker)
