"""Stopping the servers the tests start, each in a process group of its own."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_group(process: subprocess.Popen, term_wait_s: float = 10) -> None:
    """SIGTERM the process's group, then SIGKILL it if it has not exited in ``term_wait_s``."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=term_wait_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
