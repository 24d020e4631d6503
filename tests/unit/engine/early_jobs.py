"""Jobs and warm-ups for the early pool's tests: a plain module, so that spawned workers
import them by name."""

from __future__ import annotations

import os
import sys
import time

# The pids of the processes whose warm-up ran: a job in a warmed process finds its own.
WARMED: list[int] = []
# A module only a warm-up imports (by name, as early_pool's ``modules``).
MARKER = "tests.unit.engine.early_marker"


def warm() -> None:
    WARMED.append(os.getpid())


def warm_fails() -> None:
    raise RuntimeError("the bucket cannot be opened")


def warmed(_item: int) -> tuple[bool, bool]:
    """Whether this process ran the warm-up, and imported the marker module before the job."""
    return os.getpid() in WARMED, MARKER in sys.modules


def pid(_item: int) -> int:
    return os.getpid()


def wait_for(path: str) -> None:
    """A warm-up that lasts until ``path`` exists (a minute at most)."""
    deadline = time.monotonic() + 60
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.02)
