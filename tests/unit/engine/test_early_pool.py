"""The run's pool spawned early (``spawned.early_pool``, ``tierflow copy --no-spark``): its
workers import and open what the jobs need while the parent still imports and plans, the
run's jobs then go to those very workers, a warm-up that fails costs nothing but its head
start, and a pool no run took leaves no process behind."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from tests.unit.engine.early_jobs import MARKER, pid, wait_for, warm, warm_fails, warmed
from tierflow.config import Settings
from tierflow.engine import worker
from tierflow.engine.processes import on_cores
from tierflow.engine.spawned import early_pool, take_early

BIG = 64 << 20  # each item's size: enough for the batch to go to processes
JOBS = [1, 2, 3, 4]

needs_two_cores = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="an early pool leaves this process one core"
)


def _run(func: Callable[[int], object], workers: int = 2) -> list[object]:
    done = on_cores(func, JOBS, size=lambda _: BIG, workers=workers, died=_died, what="test")
    return [result for _item, result in done]


def _died(item: int, exc: BaseException) -> str:
    return f"{item} died: {exc}"


@needs_two_cores
def test_the_runs_jobs_go_to_the_warmed_workers() -> None:
    with early_pool(2, (MARKER,), warm):
        results = _run(warmed)
    assert results == [(True, True)] * len(JOBS)


@needs_two_cores
def test_a_failed_warm_up_leaves_the_pool_working() -> None:
    with early_pool(2, ("tierflow.no_such_module",), warm_fails):
        results = _run(pid)
    assert all(isinstance(r, int) and r != os.getpid() for r in results), results


@needs_two_cores
def test_a_pool_no_run_took_leaves_no_process() -> None:
    with early_pool(2, (MARKER,), warm):
        assert multiprocessing.active_children(), "nothing was spawned early"
        _run(pid, workers=1)  # one process: the jobs run here, the pool stays untaken
    assert multiprocessing.active_children() == []
    assert take_early() is None


@needs_two_cores
def test_the_last_worker_is_spawned_once_the_first_are_warm(tmp_path: Path) -> None:
    """All but one core's worth start at once, beside this process's own imports; the last
    one starts as soon as they are warm, so it is ready when the jobs come, not a start
    after them."""
    cores = len(os.sched_getaffinity(0))
    go = tmp_path / "warm-ups may end"
    with early_pool(cores, (), partial(wait_for, str(go))):
        time.sleep(0.3)
        assert len(multiprocessing.active_children()) == cores - 1
        go.touch()
        assert _within(30, lambda: len(multiprocessing.active_children()) == cores)


def _within(seconds: float, condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_for_one_worker_nothing_is_spawned_early() -> None:
    """A run of one worker keeps its jobs in this process (processes.on_cores)."""
    with early_pool(1, (MARKER,), warm):
        assert multiprocessing.active_children() == []
        assert take_early() is None


@pytest.mark.parametrize(("given", "setting", "spawned"), [(None, 3, 3), (2, 3, 2), (None, 0, 0)])
def test_the_early_pool_takes_the_settings_processes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    given: int | None,
    setting: int,
    spawned: int,
) -> None:
    """--workers first, then TIERFLOW_WORKER_PROCESSES, then one per core (0 here)."""
    seen: list[int] = []
    monkeypatch.setattr(worker, "early_pool", lambda count, *_: seen.append(count))
    monkeypatch.setattr(worker, "default_workers", lambda: 0)
    monkeypatch.setenv("TIERFLOW_WORKER_PROCESSES", str(setting))
    settings = Settings.from_env().updated(data_dir=tmp_path)
    worker.early_workers(settings, given, (MARKER,))
    assert seen == [spawned]


def test_on_one_core_nothing_is_spawned_early() -> None:
    probe = (
        "import multiprocessing, os\n"
        "os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})\n"
        "from tierflow.engine.spawned import early_pool, take_early\n"
        "with early_pool(4, ()):\n"
        "    print(len(multiprocessing.active_children()), take_early())\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.split() == ["0", "None"], done.stderr


@pytest.mark.parametrize(
    ("bucket", "opens_storage"),
    [("{tmp}/bucket", True), ("file://{tmp}/bucket", True), ("s3://bucket/tier", False)],
)
def test_only_a_local_bucket_is_opened_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bucket: str, opens_storage: bool
) -> None:
    """A cloud bucket's jobs carry the connection the copy resolves later: a worker opening
    one ahead without it would open another storage (engine.worker.early_workers)."""
    seen: list[tuple[int, tuple[str, ...], object]] = []
    monkeypatch.setattr(worker, "early_pool", lambda *args: seen.append(args))
    settings = Settings.embedded(tmp_path).updated(remote_storage=bucket.format(tmp=tmp_path))
    worker.early_workers(settings, 3, (MARKER,))
    ((workers, modules, warm),) = seen
    assert (workers, modules) == (3, (MARKER,))
    assert (warm is not None) == opens_storage
