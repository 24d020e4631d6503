"""What one kind of job does on a worker core: the part of an operation that Spark's executors
and the engine's processes run alike.

A kind is a module-level constant made of module-level functions, so spawned processes and
Spark's executors unpickle it by importing its module. It turns a job's JSON row into the
typed job, runs it against the worker's storage, and reports one result row per segment it
touched; a failure becomes a result row, never an exception, so one bad job does not take the
others of its batch down with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from tierflow.engine.worker import Worker


class SizedJob(Protocol):
    """Every job sizes itself: the pool starts the largest first, Spark's threshold adds them."""

    @property
    def size_in_bytes(self) -> int: ...


Job = TypeVar("Job", bound=SizedJob)


@dataclass(frozen=True)
class JobKind(Generic[Job]):
    """How jobs of one kind are read, run on a worker, and reported when their process died."""

    doing: str  # for the log: "rewriting segments", "merging partitions", ...
    worker_point: str  # the crash point (tierflow.faults) a pool process passes before each job
    load: Callable[[dict], Job]
    run: Callable[[Job, Worker], list[dict]]  # the result rows; failures are rows with an error
    died: Callable[[Job, BaseException], list[dict]]  # the rows of a job whose process died

    def size(self, job: Job) -> int:
        return job.size_in_bytes


def run_rows(kind: JobKind[Job], worker: Worker, rows: Iterable[dict]) -> Iterator[dict]:
    """The result rows of ``rows``, in order: what one Spark task runs over its partition."""
    for row in rows:
        yield from kind.run(kind.load(row), worker)
