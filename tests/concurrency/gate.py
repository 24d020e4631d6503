"""Hold a process at tierflow's crash points, so a test can force an interleaving of two runs.

``tierflow.faults.crash_point`` appends a line to the file named by TIERFLOW_CRASH_TRACE at every
step boundary, opening it with O_WRONLY each time. Here that name is a symlink to a FIFO: opening
a FIFO for writing blocks until a reader opens it, so the process stops right at the crash point
(its step done, the next not begun) and waits, in the kernel's ``wait_for_partner``. The library
runs unchanged; only the trace file is special.

``release`` first points the symlink at a fresh FIFO, then opens the old one for reading: the
held process writes its line (the point's name) and goes on, and its next crash point blocks on
the new FIFO however soon it gets there. So a process moves exactly one step per release.
"""

from __future__ import annotations

import os
import select
import time
from pathlib import Path
from typing import Protocol

from tierflow.faults import ENV_CRASH_TRACE

# Hang guards only: a held process is noticed within milliseconds.
HOLD_TIMEOUT_S = 120.0
POLL_S = 0.002
WAITING_IN_FIFO_OPEN = "wait_for_partner"


class Process(Protocol):
    """What a gate needs of the process it holds (a Popen, or runs.Child)."""

    @property
    def pid(self) -> int: ...
    @property
    def returncode(self) -> int | None: ...
    def poll(self) -> int | None: ...


class GateError(AssertionError):
    """The process did not do what the schedule expected (or hung)."""


class Gate:
    """One process's crash points, held and released one at a time by the test."""

    def __init__(self, directory: Path, name: str) -> None:
        self.name = name
        self.directory = directory / f"gate-{name}"
        self.directory.mkdir(parents=True)
        self.link = self.directory / "trace"
        self.passed: list[str] = []  # the points released so far, "name#n"
        self._count = 0
        self._fifo = self._new_fifo()
        self.link.symlink_to(self._fifo)
        self._process: Process | None = None

    def env(self) -> dict[str, str]:
        return {ENV_CRASH_TRACE: str(self.link)}

    def bind(self, process: Process) -> None:
        self._process = process

    @property
    def process(self) -> Process:
        if self._process is None:
            raise GateError(f"{self.name}: no process bound")
        return self._process

    def wait_held(self, timeout: float = HOLD_TIMEOUT_S) -> bool:
        """True once the process waits at a crash point, False if it exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if _waiting_in_fifo_open(self.process.pid):
                return True
            time.sleep(POLL_S)
        raise GateError(f"{self.name}: neither held nor finished after {timeout:.0f} s")

    def release(self) -> str | None:
        """Let the held process pass one crash point; its name, or None if it had exited."""
        if not self.wait_held():
            return None
        held = self._fifo
        self._fifo = self._new_fifo()
        self._point_link_at(self._fifo)
        line = _read_line(held, self.process)
        held.unlink()
        point = line.rstrip("\n").split("\t")[1]
        self.passed.append(point)
        return point

    def run_until(self, point: str) -> None:
        """Release until ``point`` has been passed, and wait until the process holds at the next
        one (or has exited): only then has it done everything that comes after ``point``."""
        while True:
            passed = self.release()
            if passed is None:
                raise GateError(f"{self.name}: exited before {point}; passed {self.passed}")
            if passed == point:
                self.wait_held()
                return

    def hold_at(self, point: str, order: list[str]) -> None:
        """Release the points before ``point`` in ``order`` (this process's solo run), so it
        holds at ``point``; the name is checked when it is released."""
        index = order.index(point)
        while len(self.passed) < index:
            expected = order[len(self.passed)]
            passed = self.release()
            if passed != expected:
                raise GateError(f"{self.name}: passed {passed}, expected {expected}")
        if not self.wait_held():
            raise GateError(f"{self.name}: exited before {point}; passed {self.passed}")

    def finish(self, timeout: float = HOLD_TIMEOUT_S) -> int:
        """Stop holding: every later crash point only appends to a plain file. Exit status."""
        log = self.directory / "after-finish.log"
        log.touch()
        self._point_link_at(log)
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            if _waiting_in_fifo_open(self.process.pid):
                # Held before the switch: let it through; its next point writes to the file.
                line = _read_line(self._fifo, self.process)
                self.passed.append(line.rstrip("\n").split("\t")[1])
            if time.monotonic() > deadline:
                raise GateError(f"{self.name}: did not finish within {timeout:.0f} s")
            time.sleep(POLL_S)
        self.passed += [ln.split("\t")[1] for ln in log.read_text().splitlines() if ln]
        return self.process.poll() or 0

    def _new_fifo(self) -> Path:
        self._count += 1
        path = self.directory / f"fifo-{self._count}"
        os.mkfifo(path)
        return path

    def _point_link_at(self, target: Path) -> None:
        tmp = self.directory / "trace.new"
        tmp.symlink_to(target)
        tmp.replace(self.link)


def _waiting_in_fifo_open(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/wchan").read_text() == WAITING_IN_FIFO_OPEN
    except OSError:
        return False


def _read_line(fifo: Path, process: Process) -> str:
    """Open the FIFO's read end (the held writer goes on) and read the line it writes."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    data = b""
    deadline = time.monotonic() + HOLD_TIMEOUT_S
    try:
        while not data.endswith(b"\n"):
            if time.monotonic() > deadline:
                raise GateError(f"no line from pid {process.pid} at {fifo}")
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                chunk = os.read(fd, 4096)
                data += chunk
                if not chunk and process.poll() is not None:
                    raise GateError(f"pid {process.pid} exited while being released")
    finally:
        os.close(fd)
    return data.decode()
