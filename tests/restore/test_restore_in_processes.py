"""``tierflow restore --workers 2`` writes its segments on the engine's pool: each segment in a
child process (the crash trace's pids), the log dir byte for byte as a restore in one process
writes it. A worker SIGKILLed mid-batch fails the restore on one line naming a segment, the
target as it was; the rerun ends as the uninterrupted restore."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus.damage import digest_tree
from tests.support.restored import assert_restored_as_written
from tests.support.tiered import Tiered, copied_by_cli
from tierflow.faults import ENV_CRASH_AT, ENV_CRASH_TRACE

pytestmark = pytest.mark.slow

SEGMENTS = 5  # tiered of orders: three segments of partition 0, two of partition 1


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    return copied_by_cli(tmp_path_factory.mktemp("tiered"))


def restore(
    t: Tiered, target: Path, workers: int, *flags: str, **env: str
) -> subprocess.CompletedProcess:
    full = {**os.environ, **t.settings.as_env(), **env}
    for name in (ENV_CRASH_AT, ENV_CRASH_TRACE):
        if name not in env:
            full.pop(name, None)
    command = [sys.executable, "-m", "tierflow.cli", "restore", "orders", "--to", str(target)]
    command += ["--workers", str(workers), *flags]
    return subprocess.run(command, env=full, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def in_one_process(tiered: Tiered, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    target = tmp_path_factory.mktemp("one")
    done = restore(tiered, target, 1)
    assert done.returncode == 0, done.stderr
    return digest_tree(target)


# Below the Spark threshold by default; --no-spark spawns the workers before the restore plans
# (cli.early): the same jobs on the same two processes.
WHERE = pytest.mark.parametrize("flags", [(), ("--no-spark",)], ids=["default", "no-spark"])


@WHERE
def test_each_segment_is_written_in_a_worker_process(
    tiered: Tiered, in_one_process: dict[str, str], tmp_path: Path, flags: tuple[str, ...]
) -> None:
    trace, target = tmp_path / "trace", tmp_path / "restored"
    done = restore(tiered, target, 2, *flags, **{ENV_CRASH_TRACE: str(trace)})
    assert done.returncode == 0, done.stderr
    lines = [line.split("\t") for line in trace.read_text().splitlines()]
    workers = [int(pid) for pid, point, _ in lines if point.startswith("restore.worker#")]
    parent = {int(pid) for pid, point, _ in lines if point.startswith("restore.after_segment#")}
    assert len(workers) == SEGMENTS
    assert len(parent) == 1 and not parent & set(workers)
    # A pool spawned for the jobs starts both processes at once; one spawned before the plan
    # (--no-spark) may write these small segments on its first before the second is up.
    assert len(set(workers)) in ({1, 2} if flags else {2})
    for partition in (0, 1):
        assert_restored_as_written(tiered.store, tiered.log("orders", partition), target)
    assert digest_tree(target) == in_one_process


@WHERE
def test_a_worker_killed_mid_batch_leaves_the_target_and_the_rerun_completes(
    tiered: Tiered, in_one_process: dict[str, str], tmp_path: Path, flags: tuple[str, ...]
) -> None:
    killed = restore(tiered, tmp_path, 2, *flags, **{ENV_CRASH_AT: "restore.worker#2"})
    assert killed.returncode == 2, killed.stdout + killed.stderr  # one line on stderr
    assert "the process restoring it died" in killed.stderr, killed.stderr
    assert "Traceback" not in killed.stderr
    assert not any(p.name.startswith("orders-") for p in tmp_path.iterdir()), "nothing placed"
    rerun = restore(tiered, tmp_path, 2, *flags)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert digest_tree(tmp_path) == in_one_process
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_killed_worker_is_a_sigkill(tiered: Tiered, tmp_path: Path) -> None:
    """The kill above is real: the trace records it in a child, and the parent lives on."""
    trace = tmp_path / "trace"
    env = {ENV_CRASH_AT: "restore.worker#1", ENV_CRASH_TRACE: str(trace)}
    killed = restore(tiered, tmp_path / "target", 2, **env)
    assert killed.returncode not in (0, -signal.SIGKILL), killed.stderr
    kills = [line for line in trace.read_text().splitlines() if line.endswith("\tkill")]
    assert kills and all("restore.worker#1" in line for line in kills)
