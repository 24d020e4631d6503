"""How the engine's worker processes start and end (processes.py runs jobs on them).

Processes are spawned, not forked: an Airflow task or a Spark driver may hold threads and locks
a fork would copy in whatever state they were. A fresh worker imports tierflow and opens its
storage, about 0.4 s before its first job; a ``tierflow copy`` process spends about 0.7 s on its
own imports before it knows its jobs. ``early_pool`` lets the two overlap: the run's pool is
spawned first, and the run's first call on more than one process takes it (``take_early``).

A worker never runs this process's main script (``WorkerProcess``): spawn's children run it
again when it was started from a path, as a console script is, and where this process is an
Airflow task, forked from ``airflow scheduler`` or a Celery worker, that script imports
Airflow: 1.5-2 s more per worker than its own imports. Jobs are module-level functions of
importable modules (``engine.kind``), never of ``__main__``.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import logging
import os
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from multiprocessing.context import SpawnContext, SpawnProcess

log = logging.getLogger(__name__)

PARENT_CHECK_S = 0.5
Warm = Callable[[], object]

# The pool early_pool spawned, until a run takes it or the early_pool block ends.
_early: list[ProcessPoolExecutor] = []
# Held while a worker's start has this process's __main__ swapped out (WorkerProcess).
_main_swap = threading.Lock()


class WorkerProcess(SpawnProcess):
    """A spawned process whose start does not hand it this process's ``__main__`` to run
    again: spawn reads ``sys.modules["__main__"]`` as it starts a child, so the start sees an
    empty module in its place (under a lock, for the milliseconds of the fork and exec)."""

    def start(self) -> None:
        with _main_swap:
            main = sys.modules.get("__main__")
            sys.modules["__main__"] = types.ModuleType("__main__")
            try:
                super().start()
            finally:
                if main is None:
                    sys.modules.pop("__main__", None)
                else:
                    sys.modules["__main__"] = main


class WorkerContext(SpawnContext):
    """Spawn, with ``WorkerProcess`` for the pool's processes."""

    Process = WorkerProcess


def new_pool(
    workers: int, modules: tuple[str, ...] = (), warm: Warm | None = None
) -> ProcessPoolExecutor:
    """``workers`` spawned processes, each first running ``start_worker``."""
    return ProcessPoolExecutor(
        workers,
        mp_context=WorkerContext(),
        initializer=start_worker,
        initargs=(os.getpid(), modules, warm),
    )


def start_worker(parent: int, modules: tuple[str, ...] = (), warm: Warm | None = None) -> None:
    """In each worker, first: it dies with ``parent``, and it freezes its objects once it is
    told to exit, so the interpreter's shutdown leaves them out of its last cyclic collections
    (0.1 s per worker, and the pool's shutdown waits for the slowest). Then it imports
    ``modules`` and runs ``warm`` (an early pool's head start); what fails there is left for
    the first job, which does the same again and reports it as that job's failure."""
    die_with(parent)
    atexit.register(gc.freeze)
    try:
        for name in modules:
            importlib.import_module(name)
        if warm is not None:
            warm()
    except Exception as exc:  # an initializer's error would break the pool for every job
        log.debug("warming a worker failed; its first job will say why: %s", exc)


def die_with(parent: int) -> None:
    """In each worker: exit once ``parent`` is gone. A parent killed outright (SIGKILL, an
    Airflow task's timeout) cannot stop its pool, and idle workers would wait on it forever,
    holding its output pipes open."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()


@contextmanager
def early_pool(workers: int, modules: tuple[str, ...], warm: Warm | None = None) -> Iterator[None]:
    """A pool of ``workers`` processes, all but one core's worth spawned now, each importing
    ``modules`` and running ``warm`` while this process goes on with its own imports and
    planning on the core left to it (on two cores a worker per core would slow it as much as
    it saves). The rest are spawned once those are warm (``_spawn_rest``), on the cores they
    leave idle, so that every worker is ready when the jobs come, not the last one a start
    later. A pool no run took by the end of the block (nothing to copy, a batch small enough
    for this process) is killed: its processes hold nothing yet, and waiting for them would
    add their start to the exit."""
    now = min(workers, len(os.sched_getaffinity(0)) - 1)
    if now < 1 or workers < 2:  # one worker: the run's jobs stay in this process
        yield
        return
    pool = new_pool(workers, modules, warm)
    started = [pool.submit(os.getpid) for _ in range(now)]  # a submit spawns while none is idle
    if workers > now:
        rest = threading.Thread(
            target=_spawn_rest, args=(pool, started, workers - now), name="spawn-rest", daemon=True
        )
        rest.start()
    _early.append(pool)
    try:
        yield
    finally:
        if pool in _early:
            _early.remove(pool)
            _kill(pool)


def _spawn_rest(pool: ProcessPoolExecutor, started: list[Future[int]], count: int) -> None:
    """Once every process spawned first has started (its first call ran after its warm-up), up
    to ``count`` others. A submit spawns a process only while none is idle, and these would
    be, so they are spawned as submit spawns them (under its lock, never past the pool's size;
    the pool's private API, as ``_kill``). A run that took the pool meanwhile has spawned them
    with its jobs already, and a pool killed meanwhile is left alone."""
    try:
        for future in started:
            future.result()
        with pool._shutdown_lock:  # type: ignore[attr-defined]
            for _ in range(count):
                if pool._broken or pool._shutdown_thread:  # type: ignore[attr-defined]
                    return
                if len(pool._processes) >= pool._max_workers:  # type: ignore[attr-defined]
                    return
                pool._spawn_process()  # type: ignore[attr-defined]
    except (BrokenProcessPool, CancelledError, AttributeError) as exc:
        log.debug("early pool: the rest not spawned ahead: %s", exc)


def take_early() -> ProcessPoolExecutor | None:
    """The pool early_pool spawned, for the caller to use and shut down; None without one."""
    return _early.pop() if _early else None


def _kill(pool: ProcessPoolExecutor) -> None:
    # Python 3.14 has pool.kill_workers(); before it, the processes are only reachable here.
    for process in list(getattr(pool, "_processes", {}).values()):
        process.kill()
    pool.shutdown(wait=True, cancel_futures=True)
