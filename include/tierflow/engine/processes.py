"""Work on every core of this machine, in processes: the jobs of a batch (engine.pool).

Processes, not threads: the CRC walk over a segment's batches, zstd, AES-GCM and sha256 each
hold the GIL for much of their work, so threads top out near one core. Starting one (a fresh
interpreter importing tierflow, spawned.py) costs a few hundred milliseconds, so work under
``PARALLEL_MIN_BYTES`` stays in the caller's process.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from tierflow.engine.spawned import new_pool, take_early

log = logging.getLogger(__name__)

Item = TypeVar("Item")
Result = TypeVar("Result")

PARALLEL_MIN_BYTES = 32 << 20


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
    first, so the last to finish are small ones and no core idles long at the end. The run's
    early pool when it spawned one (spawned.early_pool), else ``workers`` new processes.
    ``func`` must be a module-level function: spawned processes find it by import."""
    with take_early() or new_pool(workers) as pool:
        ordered = sorted(items, key=size, reverse=True)
        futures = {pool.submit(func, item): item for item in ordered}
        for future in as_completed(futures):
            yield futures[future], future


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
