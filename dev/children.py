"""What the processes dev/ starts share: they die with the process that started them."""

from __future__ import annotations

import ctypes
import signal

_PR_SET_PDEATHSIG = 1


def set_parent_death_signal() -> None:
    """In the child: the kernel sends SIGTERM if the process that started us dies (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
