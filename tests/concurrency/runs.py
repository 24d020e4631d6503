"""Start runs as separate processes against one store, bucket and log dir, and collect them.

Each run is its own OS process, forked from a multiprocessing fork server that has imported
tierflow once (a fresh interpreter spends a second or more importing it): the child gets the
run's environment and output file, then runs worker.py's ``main`` as ``python -m`` would.

Two ways to overlap runs: ``start_together`` releases free-running processes at the same moment
(each waits for one start file) with small staggers; a Gate (gate.py) holds a process at its
crash points so the test decides the order of steps.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from dataclasses import dataclass
from functools import cache
from multiprocessing.context import ForkServerContext
from pathlib import Path

from tests.chaos.harness import operation_env
from tests.concurrency import worker
from tests.concurrency.gate import Gate
from tests.concurrency.worker import ENV_DELAY_MS, ENV_READY_FILE, ENV_START_FILE
from tierflow.config import Settings

RUN_TIMEOUT_S = 180  # a hang guard: a run takes about a second


@cache
def _fork_server() -> ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([worker.__name__])
    return context


class Child:
    """A forked run, with the part of Popen's interface the gates and runs use."""

    def __init__(self, process: multiprocessing.process.BaseProcess) -> None:
        self._process = process

    @property
    def pid(self) -> int:
        assert self._process.pid is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.exitcode

    def poll(self) -> int | None:
        return self._process.exitcode

    def wait(self, timeout: float) -> int | None:
        self._process.join(timeout)
        return self._process.exitcode

    def kill(self) -> None:
        if self._process.exitcode is None:
            self._process.kill()
            self._process.join()


@dataclass
class Run:
    name: str
    process: Child
    directory: Path
    gate: Gate | None = None

    def wait(self, timeout: float = RUN_TIMEOUT_S) -> dict:
        """The run's outcome (worker.py) once it exits; its output if it crashed."""
        if self.gate is not None:
            self.gate.finish(timeout)
        if self.process.wait(timeout) is None:
            self.process.kill()
            raise AssertionError(f"run {self.name} hung:\n{self.output()}")
        result = self.directory / "result.json"
        if self.process.returncode != 0 or not result.is_file():
            raise AssertionError(
                f"run {self.name} exited {self.process.returncode}:\n{self.output()}"
            )
        return json.loads(result.read_text())

    def output(self) -> str:
        return (self.directory / "output.log").read_text(errors="replace")[-6000:]

    def kill(self) -> None:
        self.process.kill()


def start(
    settings: Settings,
    work: Path,
    name: str,
    operation: str,
    *args: object,
    gated: bool = False,
    start_file: Path | None = None,
    delay_ms: int = 0,
) -> Run:
    """One worker process (worker.py) running ``operation`` with ``settings``."""
    directory = work / name
    directory.mkdir(parents=True)
    env = operation_env(settings, crash_at=None, trace=None)
    gate = Gate(directory, name) if gated else None
    if gate is not None:
        env.update(gate.env())
    if start_file is not None:
        env[ENV_START_FILE] = str(start_file)
        env[ENV_READY_FILE] = str(directory / "ready")
        env[ENV_DELAY_MS] = str(delay_ms)
    argv = [str(directory / "result.json"), operation, *map(str, args)]
    output = directory / "output.log"
    output.touch()
    # Daemonic: never outlives the test session, even if a test leaves it held at a gate.
    forked = _fork_server().Process(target=worker.child, args=(env, str(output), argv), daemon=True)
    forked.start()
    process = Child(forked)
    if gate is not None:
        gate.bind(process)
    run = Run(name, process, directory, gate)
    _started.append(run)
    return run


_started: list[Run] = []


def kill_leftovers() -> None:
    """Kill what a failed test left running (held at a gate, or hung); for teardown."""
    while _started:
        _started.pop().kill()


def start_together(
    settings: Settings, work: Path, runs: list[tuple[str, str, tuple, int]]
) -> list[Run]:
    """Start every (name, operation, args, delay_ms) and release them all at once."""
    start_file = work / "start"
    started = [
        start(settings, work, name, op, *args, start_file=start_file, delay_ms=delay)
        for name, op, args, delay in runs
    ]
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while not all((run.directory / "ready").exists() for run in started):
        if time.monotonic() > deadline or any(r.process.poll() is not None for r in started):
            for run in started:
                run.kill()
            raise AssertionError("the runs did not get ready: " + started[0].output())
        time.sleep(0.005)
    start_file.touch()
    return started


def wait_all(runs: list[Run]) -> list[dict]:
    try:
        return [run.wait() for run in runs]
    finally:
        for run in runs:
            run.kill()


def solo_order(settings: Settings, work: Path, operation: str, *args: object) -> list[str]:
    """The crash points ``operation`` passes when it runs alone, in order: the map a Gate's
    ``hold_at`` steers by. ``settings`` must be a fresh copy of the scenario's starting state."""
    run = start(settings, work, f"solo-{operation}", operation, *args, gated=True)
    assert run.gate is not None
    run.wait()
    return run.gate.passed
