"""What each engine worker process does first (``spawned.start_worker``): it ends once its
parent is gone, and at its own exit it freezes its objects before the interpreter's shutdown
walks them (0.1 s per worker; the pool's shutdown waits for the slowest). And what it never
does: run its parent's main script again, which in an Airflow task is ``airflow``'s."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

# An atexit handler registered before start_worker's runs after it (last in, first out).
FROZEN_PROBE = """\
import atexit, gc, os
atexit.register(lambda: print(f"frozen at exit: {gc.get_freeze_count()}"))
from tierflow.engine.spawned import start_worker
start_worker(os.getppid())
"""

# A parent that starts a worker, waits until it watches, prints its pid and is SIGKILLed.
ORPHAN_PROBE = """\
import os, subprocess, sys
worker = subprocess.Popen(
    [sys.executable, "-c", sys.argv[1], str(os.getpid())],
    stdout=subprocess.PIPE,
    stderr=subprocess.DEVNULL,
)
worker.stdout.readline()
print(worker.pid, flush=True)
os.kill(os.getpid(), 9)
"""
WORKER = """\
import sys, time
from tierflow.engine.spawned import start_worker
start_worker(int(sys.argv[1]))
print("watching", flush=True)
time.sleep(60)
"""

# A main script, as ``airflow scheduler``'s is to the tasks it forks: its top level notes each
# process that runs it, and its main block runs jobs on two spawned workers.
MAIN_SCRIPT = """\
import os, sys
with open(sys.argv[1], "a") as ran:
    ran.write(f"{os.getpid()}\\n")
if __name__ == "__main__":
    from tests.unit.engine.early_jobs import pid
    from tierflow.engine.processes import on_cores
    done = on_cores(pid, [1, 2, 3, 4], size=lambda _: 1 << 30, workers=2, died=str, what="t")
    workers = {worker for _item, worker in done} - {os.getpid()}
    print(os.getpid(), len(workers))
"""


def test_a_worker_does_not_run_its_parents_main_script(tmp_path: Path, project_root: Path) -> None:
    script, ran = tmp_path / "scheduler.py", tmp_path / "ran"
    script.write_text(MAIN_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script), str(ran)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=project_root,
        env={**os.environ, "PYTHONPATH": str(project_root)},
    )
    assert done.returncode == 0, done.stderr
    parent, workers = done.stdout.split()
    assert int(workers) >= 1, "no job ran in a worker process"
    assert ran.read_text().split() == [parent], "a worker ran the main script again"


def test_a_worker_freezes_its_objects_at_exit() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FROZEN_PROBE], capture_output=True, text=True, check=True
    )
    (line,) = done.stdout.splitlines()
    assert int(line.rsplit(" ", 1)[1]) > 1_000


def test_a_worker_ends_when_its_parent_is_killed() -> None:
    done = subprocess.run(
        [sys.executable, "-c", ORPHAN_PROBE, WORKER], capture_output=True, text=True, timeout=30
    )
    worker = int(done.stdout.split()[0])
    deadline = time.monotonic() + 20
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), "the worker outlived its killed parent"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
