"""``tierflow scrub`` from a shell: a run SIGKILLed mid-scrub is resumed by the next, and a
damaged object is one line on stderr and exit status 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.tiered import Tiered, build_tiered
from tierflow.config import Settings
from tierflow.faults import ENV_CRASH_AT, ENV_CRASH_SIGNAL, ENV_CRASH_TRACE
from tierflow.lifecycle.copy.steps import copy_partition

RUN_TIMEOUT_S = 180


def tierflow(
    settings: Settings, *argv: str, crash_at: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **settings.as_env()}
    for name in (ENV_CRASH_AT, ENV_CRASH_SIGNAL, ENV_CRASH_TRACE):
        env.pop(name, None)
    if crash_at:
        env[ENV_CRASH_AT] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", *argv]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    return t


def checked(t: Tiered) -> set[str]:
    every = [r.segment_id for r in t.store.scrub_queue(limit=10_000)]
    return {s for s in every if t.store.scrub_of(s) is not None}


def test_a_run_killed_mid_scrub_is_resumed_by_the_next(tiered: Tiered) -> None:
    every = [r.segment_id for r in tiered.store.scrub_queue(limit=10_000)]
    killed = tierflow(tiered.settings, "scrub", crash_at="scrub.after_verdict#2")
    assert killed.returncode == -9, killed.stderr
    done = checked(tiered)
    assert len(done) == 2, "each verdict is recorded before the next segment"
    rerun = tierflow(tiered.settings, "scrub", "--json")
    assert rerun.returncode == 0, rerun.stderr
    order = [s["segment_id"] for s in json.loads(rerun.stdout)["segments"]]
    assert set(order[: len(every) - 2]) == set(every) - done, "the rest first"
    assert set(order) == set(every)


def test_a_damaged_object_is_one_line_and_exit_1(tiered: Tiered) -> None:
    victim = tiered.store.scrub_queue(limit=1)[0].segment_id
    (key,) = [o.key for o in tiered.store.segment_objects(victim) if o.kind == "log"]
    path = tiered.bucket() / key
    path.write_bytes(path.read_bytes()[:-1])
    result = tierflow(tiered.settings, "scrub")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"tierflow: scrub: {key}: ") and victim in line
    assert "1 finding" in result.stdout
