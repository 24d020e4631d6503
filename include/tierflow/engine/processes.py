"""Work on every core of this machine, in processes: the jobs of a batch (engine.pool).

Processes, not threads: the CRC walk over a segment's batches, zstd, AES-GCM and sha256 each
hold the GIL for much of their work, so threads top out near one core. Processes are spawned,
not forked: an Airflow task or a Spark driver may hold threads and locks a fork would copy in
whatever state they were. Starting one (a fresh interpreter importing tierflow) costs a few
hundred milliseconds, so work under ``PARALLEL_MIN_BYTES`` stays in the caller's process.
"""

from __future__ import annotations

import atexit
import gc
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Result = TypeVar("Result")

PARALLEL_MIN_BYTES = 32 << 20
PARENT_CHECK_S = 0.5


def default_workers() -> int:
    """One process per core this process may run on."""
    return max(1, len(os.sched_getaffinity(0)))


def workers_for(total_bytes: int, items: int, workers: int | None = None) -> int:
    """How many processes: ``workers`` when given, else one per core for work of at least
    PARALLEL_MIN_BYTES; never more than there are items."""
    if workers is None:
        workers = default_workers() if total_bytes >= PARALLEL_MIN_BYTES else 1
    return max(1, min(workers, items))


def largest_first(
    func: Callable[[Item], Result],
    items: Sequence[Item],
    *,
    size: Callable[[Item], int],
    workers: int,
) -> Iterator[tuple[Item, Future]]:
    """Each item with its finished future, in the order they finish; the largest items start
    first, so the last to finish are small ones and no core idles long at the end.
    ``func`` must be a module-level function: spawned processes find it by import."""
    context = multiprocessing.get_context("spawn")
    parent = os.getpid()
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=start_worker, initargs=(parent,)
    ) as pool:
        ordered = sorted(items, key=size, reverse=True)
        futures = {pool.submit(func, item): item for item in ordered}
        for future in as_completed(futures):
            yield futures[future], future


def start_worker(parent: int) -> None:
    """In each worker, first: it dies with ``parent``, and it freezes its objects once it is
    told to exit, so the interpreter's shutdown leaves them out of its last cyclic collections
    (0.1 s per worker, and the pool's shutdown waits for the slowest)."""
    die_with(parent)
    atexit.register(gc.freeze)


def die_with(parent: int) -> None:
    """In each worker: exit once ``parent`` is gone. A parent killed outright (SIGKILL, an
    Airflow task's timeout) cannot stop its pool, and idle workers would wait on it forever,
    holding its output pipes open."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


def on_cores(
    func: Callable[[Item], Result],
    items: Sequence[Item],
    *,
    size: Callable[[Item], int],
    workers: int | None,
    died: Callable[[Item, BrokenProcessPool], Result],
    what: str,
) -> Iterator[tuple[Item, Result]]:
    """Each item with its result, in the order they finish: in processes when the work is big
    enough (``workers_for``), else one by one here. An item whose process died (killed, out of
    memory) gets ``died``'s result, as does every item not yet back: the pool is broken."""
    total = sum(size(item) for item in items)
    count = workers_for(total, len(items), workers)
    if count <= 1:
        for item in items:
            yield item, func(item)
        return
    log.info("%s: %d items (%d bytes) in %d processes", what, len(items), total, count)
    for item, future in largest_first(func, items, size=size, workers=count):
        try:
            yield item, future.result()
        except BrokenProcessPool as exc:
            yield item, died(item, exc)
