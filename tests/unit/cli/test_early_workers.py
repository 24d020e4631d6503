"""Commands whose jobs run here spawn their processes before they plan (cli.early): only when
the jobs will run on this machine's processes, each importing a module that defines the job
kind they run."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tierflow.cli.copy_commands import COPY
from tierflow.cli.early import OnEarlyWorkers
from tierflow.cli.restore_commands import RESTORE
from tierflow.engine import worker
from tierflow.engine.kind import JobKind

MODULES = ("a.job.module",)


@pytest.mark.parametrize("command", [COPY, RESTORE], ids=["copy", "restore"])
def test_each_command_warms_its_workers_with_its_job_kind(command: OnEarlyWorkers) -> None:
    (name,) = command.modules
    module = importlib.import_module(name)
    assert any(isinstance(value, JobKind) for value in vars(module).values()), name


@pytest.mark.parametrize(
    ("given", "early"),
    [
        ({}, True),
        ({"workers": 3}, True),
        ({"dry_run": True}, False),
        ({"workers": 1}, False),
        ({"here": False}, False),
    ],
    ids=["default", "three-workers", "dry-run", "one-worker", "not-here"],
)
def test_the_workers_are_spawned_first_only_for_jobs_run_here(
    monkeypatch: pytest.MonkeyPatch, given: dict, early: bool
) -> None:
    seen: list[tuple[int | None, tuple[str, ...]]] = []
    ran: list[bool] = []

    @contextmanager
    def spawned(_settings: object, workers: int | None, modules: tuple[str, ...]) -> Iterator[None]:
        seen.append((workers, modules))
        yield

    monkeypatch.setattr(worker, "early_workers", spawned)
    args = argparse.Namespace(dry_run=False, workers=None, here=True)
    vars(args).update(given)
    command = OnEarlyWorkers(lambda a: ran.append(bool(seen)) or 0, MODULES, lambda a: a.here)
    assert command(args) == 0
    assert seen == ([(args.workers, MODULES)] if early else [])
    assert ran == [early]  # the work ran inside the block that spawned them
