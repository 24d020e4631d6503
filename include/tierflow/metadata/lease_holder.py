"""The process that holds a partition's lease, and whether it provably still runs.

Why a CLI run records its process with the lease: its owner is ``cli:<host>:<pid>``, which no
later run shares, so a rerun after a SIGKILL or Ctrl-C could not take the lease over and waited
out its TTL. A stable owner (``cli:<host>``) would let a rerun in, but it would also let a second
``tierflow copy`` started beside a live one take the lease from it. So the owner stays per
process, and a rerun takes over a lease only when its holder is *provably* gone: recorded on
this host, in this boot and this pid namespace (so the pid means the same process table here),
and that pid is no longer running, is a zombie, or is running a later process (its start time
differs). Whatever cannot be proved (another host, another container, another boot) counts as
alive: the lease then waits for its TTL or for the operator's ``--owner``.

An Airflow task records no process: its prepare and finalize run in different processes, and
a cleared rerun takes its own owner's lease over anyway, as before.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path

PROC = Path("/proc")


class HolderState(StrEnum):
    """What a process on this host can tell of a lease's holder."""

    RUNNING = "running"
    GONE = "gone"
    UNKNOWN = "unknown"  # another host, boot or pid namespace: it cannot be seen from here


@dataclass(frozen=True)
class LeaseHolder:
    """A process: its host and pid, and what tells it from a later process with that pid."""

    host: str
    pid: int
    boot_id: str = ""  # the kernel's boot id; "" where there is no /proc
    pid_namespace: str = ""  # e.g. "pid:[4026531836]"
    started: str = ""  # clock ticks after boot at which the process started

    @classmethod
    def this_process(cls) -> LeaseHolder:
        return cls.of(os.getpid())

    @classmethod
    def of(cls, pid: int) -> LeaseHolder:
        """Process ``pid`` of this host (in this process's pid namespace)."""
        return cls(socket.gethostname(), pid, _boot_id(), _pid_namespace(), _started(pid))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> LeaseHolder | None:
        """The stored holder; None for none, or for text this version cannot read."""
        if not text:
            return None
        try:
            return cls(**json.loads(text))
        except (ValueError, TypeError):
            return None

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"

    def state(self) -> HolderState:
        """Judged from this process: GONE only when provably so."""
        here = LeaseHolder.this_process()
        same_table = (self.host, self.boot_id, self.pid_namespace) == (
            here.host,
            here.boot_id,
            here.pid_namespace,
        )
        if not same_table:
            return HolderState.UNKNOWN
        return HolderState.RUNNING if _runs(self.pid, self.started) else HolderState.GONE


def _runs(pid: int, started: str) -> bool:
    """The process ``pid`` that started at ``started`` still runs (a zombie does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    stat = _stat(pid)
    if stat is None:
        return True  # no /proc to look further: the pid is taken, so assume it is the holder
    state, now_started = stat
    return state != "Z" and (not started or now_started == started)


def _stat(pid: int) -> tuple[str, str] | None:
    """(state, start time) from /proc/<pid>/stat; the command name may hold spaces and ')'."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], fields[19]  # fields 3 and 22 of proc(5)


def _started(pid: int) -> str:
    stat = _stat(pid)
    return stat[1] if stat else ""


def _boot_id() -> str:
    try:
        return (PROC / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return os.readlink(PROC / "self/ns/pid")
    except OSError:
        return ""
