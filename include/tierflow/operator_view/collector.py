"""Pause CPython's cyclic garbage collector while a snapshot is built.

A snapshot of 10,000 partitions allocates about a million short-lived objects (rows, tuples,
listings) with no reference cycles among them. Each burst of allocations triggers the cyclic
collector, which then walks every live object of the process: measured, a quarter to a third
of the snapshot's time. Reference counting still frees everything as usual; collections resume
when the last overlapping snapshot is done (the API server builds them in worker threads).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Pauses:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count = 0
        self.was_enabled = False


_pauses = _Pauses()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside; left as it was (on or off) once no caller needs a pause."""
    with _pauses.lock:
        if _pauses.count == 0:
            _pauses.was_enabled = gc.isenabled()
            gc.disable()
        _pauses.count += 1
    try:
        yield
    finally:
        with _pauses.lock:
            _pauses.count -= 1
            if _pauses.count == 0 and _pauses.was_enabled:
                gc.enable()
