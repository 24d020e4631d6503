"""Crash injection points for tests: a real SIGKILL at a named step boundary.

Lifecycle code calls ``crash_point("copy.after_started")`` at every step boundary. When the
environment variable TIERFLOW_CRASH_AT names that point, the process kills itself with SIGKILL,
exactly like an OOM kill or a lost worker would. ``name#3`` kills at the third time the point is
reached, so a test can stop a run in the middle of its third segment. TIERFLOW_CRASH_SIGNAL=INT
sends SIGINT instead, an operator's Ctrl-C: Python raises KeyboardInterrupt there, so whatever
the code does on the way out (finally blocks, lease releases) runs as it would for a person.

TIERFLOW_CRASH_TRACE names a file to which every point reached is appended, one line each
(``pid<TAB>name#n<TAB>hit|kill``), written before any kill: the crash-injection harness runs an
operation once with it to enumerate the kill points, and checks afterwards that the kill it
asked for really happened (also in processes it does not start itself, such as Spark's Python
workers). Unset, both cost a dict lookup.
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter

ENV_CRASH_AT = "TIERFLOW_CRASH_AT"
ENV_CRASH_TRACE = "TIERFLOW_CRASH_TRACE"
ENV_CRASH_SIGNAL = "TIERFLOW_CRASH_SIGNAL"

_reached: Counter[str] = Counter()


def crash_point(name: str) -> None:
    spec = os.environ.get(ENV_CRASH_AT)
    trace = os.environ.get(ENV_CRASH_TRACE)
    if not spec and not trace:
        return
    _reached[name] += 1
    hit = _reached[name]
    target, _, nth = (spec or "").partition("#")
    kill = target == name and hit == int(nth or 1)
    if trace:
        append_trace(trace, f"{os.getpid()}\t{name}#{hit}\t{'kill' if kill else 'hit'}\n")
    if kill:
        how = _signal()
        if how == signal.SIGINT and threading.current_thread() is threading.main_thread():
            # A process started with SIGINT ignored (by a pytest-xdist worker, or nohup) would
            # not see it; a person's terminal has Python's handler in place: put it back.
            signal.signal(signal.SIGINT, signal.default_int_handler)
        os.kill(os.getpid(), how)


def _signal() -> signal.Signals:
    """SIGKILL, or the signal TIERFLOW_CRASH_SIGNAL names (INT, TERM)."""
    name = os.environ.get(ENV_CRASH_SIGNAL, "KILL").upper().removeprefix("SIG")
    return signal.Signals[f"SIG{name}"]


def append_trace(path: str, line: str) -> None:
    """One O_APPEND write per line, so lines from concurrent processes never interleave."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
