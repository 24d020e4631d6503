"""``tierflow copy --no-spark`` spawns its workers before it plans (engine.spawned): a run
whose batch stays in this process (too small), and a run with nothing to copy, copy what they
should and leave no worker process behind."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from tests.support.tiered import Tiered
from tierflow.cli import main


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="nothing is spawned early on one core")
def test_copy_here_leaves_no_worker_behind(
    untiered: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["copy", "--no-spark", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert multiprocessing.active_children() == []
    assert main(["copy", "--no-spark", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert multiprocessing.active_children() == []
    copied = [len(p["copied"]) for p in first["partitions"]]
    assert copied and all(copied), first
    assert [p["copied"] for p in again["partitions"]] == [[]] * len(copied)
