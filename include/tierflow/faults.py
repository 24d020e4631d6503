"""Crash injection points for tests: a real SIGKILL at a named step boundary.

Lifecycle code calls ``crash_point("copy.after_started")`` at every step boundary. When the
environment variable TIERFLOW_CRASH_AT names that point, the process kills itself with SIGKILL,
exactly like an OOM kill or a lost worker would. ``name#3`` kills at the third time the point is
reached, so a test can stop a run in the middle of its third segment. Unset, this costs a dict
lookup.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

ENV_CRASH_AT = "TIERFLOW_CRASH_AT"

_reached: Counter[str] = Counter()


def crash_point(name: str) -> None:
    spec = os.environ.get(ENV_CRASH_AT)
    if not spec:
        return
    _reached[name] += 1
    target, _, nth = spec.partition("#")
    if target == name and _reached[name] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
