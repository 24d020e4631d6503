"""A lease's holder is judged gone only when provably so: a real child process, alive, killed
and reaped, killed and not yet reaped (a zombie), and a pid now running another process."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tierflow.metadata.lease_holder import HolderState, LeaseHolder

SLEEPER = [sys.executable, "-c", "import time; time.sleep(120)"]


@pytest.fixture
def child() -> Iterator[subprocess.Popen]:
    process = subprocess.Popen(SLEEPER)
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def test_this_process_runs() -> None:
    holder = LeaseHolder.this_process()
    assert holder.pid == os.getpid() and holder.started
    assert holder.state() is HolderState.RUNNING


def test_a_live_child_runs_until_killed_and_reaped(child: subprocess.Popen) -> None:
    holder = LeaseHolder.of(child.pid)
    assert holder.state() is HolderState.RUNNING
    child.kill()
    child.wait()
    assert holder.state() is HolderState.GONE


def test_a_killed_child_not_yet_reaped_is_gone(child: subprocess.Popen) -> None:
    """A zombie still has its pid and /proc entry, but runs nothing."""
    holder = LeaseHolder.of(child.pid)
    os.kill(child.pid, signal.SIGKILL)
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, left unreaped
    assert os.path.exists(f"/proc/{child.pid}/stat"), "a zombie keeps its /proc entry"
    assert holder.state() is HolderState.GONE


def test_a_pid_running_a_later_process_is_gone(child: subprocess.Popen) -> None:
    """The pid of the holder, reused: its start time differs from the one recorded."""
    reused = dataclasses.replace(LeaseHolder.of(child.pid), started="1")
    assert reused.state() is HolderState.GONE


@pytest.mark.parametrize(
    "elsewhere",
    [{"host": "another-host"}, {"boot_id": "an-earlier-boot"}, {"pid_namespace": "pid:[1]"}],
    ids=["another host", "another boot", "another pid namespace"],
)
def test_a_process_that_cannot_be_seen_from_here_is_unknown(
    child: subprocess.Popen, elsewhere: dict[str, str]
) -> None:
    """Even a pid that is gone here proves nothing about a process in another table."""
    holder = dataclasses.replace(LeaseHolder.of(child.pid), **elsewhere)
    child.kill()
    child.wait()
    assert holder.state() is HolderState.UNKNOWN


@pytest.mark.parametrize("text", [None, "", "not json", '{"host": "h"}', '["h", 1]'], ids=repr)
def test_a_stored_holder_this_version_cannot_read_is_none(text: str | None) -> None:
    assert LeaseHolder.from_json(text) is None


def test_a_stored_holder_reads_back_equal() -> None:
    holder = LeaseHolder.this_process()
    assert LeaseHolder.from_json(holder.to_json()) == holder
