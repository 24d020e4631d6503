"""Starting and stopping the servers the tests start, each in a process group of its own."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path


def wait_answering(
    name: str, url: str, process: subprocess.Popen, log: Path, timeout_s: float
) -> None:
    """Return once ``url`` answers HTTP (any status: a refusal is an answer); fail with the
    server's log, naming it, if it exits first or stays silent for ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}: {log.read_text()}")
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{name} not answering within {timeout_s:.0f} s: {log.read_text()}")


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
