"""Kill the merge with a real SIGKILL at each step boundary, rerun it as a cleared task would,
and check that no batch was lost or merged twice.

The merge runs as ``tierflow diskless merge`` in a subprocess; TIERFLOW_CRASH_AT makes it kill
itself at the named point (tierflow.faults), as an OOM kill or a lost worker would. The rerun
uses the same lease owner, like a cleared Airflow task. Afterwards every offset reads back
exactly once with the bytes it had before, the FINISHED segments are contiguous and never
overlap, nothing is left half done, the bucket holds exactly the finished segments' objects
and the WAL objects the coordinator knows, and the collector then removes every emptied one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.diskless.diskless_support import TOPIC_ID
from tests.diskless.merge_support import (
    GRACE_MS,
    PARTITIONS,
    SEGMENT_BYTES,
    Consolidated,
    assert_merged_exactly_once,
    bucket_files,
    consolidated,
    expected_files,
)
from tierflow.diskless.gc import collect_garbage
from tierflow.faults import ENV_CRASH_AT
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.states import RemoteLogSegmentState as S

OWNER = "airflow:diskless_merge:events"


def run_merge(world: Consolidated, crash_at: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **world.settings.as_env()}
    env["TIERFLOW_DISKLESS_DELETE_GRACE_MS"] = str(GRACE_MS)
    env.pop(ENV_CRASH_AT, None)
    if crash_at:
        env[ENV_CRASH_AT] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", "diskless", "merge", "--owner", OWNER]
    command += ["--segment-bytes", str(SEGMENT_BYTES)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def killed(world: Consolidated, point: str) -> None:
    crashed = run_merge(world, point)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr


def finish_and_check(world: Consolidated, before: dict[int, list[bytes]]) -> str:
    rerun = run_merge(world)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert_merged_exactly_once(world, before)
    for partition in range(PARTITIONS):
        log = world.coordinator.log(TOPIC_ID, partition)
        assert log.diskless_start_offset == log.high_watermark, "everything merged"
    assert bucket_files(world) == expected_files(world), "no orphan objects"
    bucket = Path(world.settings.remote_storage)
    staged = [p for p in world.settings.data_dir.rglob("*.log") if bucket not in p.parents]
    assert not staged, "the merge writes nothing to local disk"
    collected = collect_garbage(
        world.coordinator,
        world.objects,
        now_ms=wall_clock_ms() + GRACE_MS + 1,
        uncommitted_grace_ms=GRACE_MS,
    )
    assert collected.deleted and world.coordinator.wal_objects() == []
    assert not any(key.startswith("diskless/") for key in bucket_files(world))
    assert [world.read_all(p) for p in range(PARTITIONS)] == list(before.values())
    return rerun.stdout


def world_with_data(tmp_path: Path) -> tuple[Consolidated, dict[int, list[bytes]]]:
    world = consolidated(tmp_path, objects=3, committed_at=wall_clock_ms() - 60_000)
    return world, {p: world.read_all(p) for p in range(PARTITIONS)}


KILL_POINTS = [
    "merge.after_lease",  # lease taken, nothing else
    "merge.after_started",  # the first segment STARTED, nothing uploaded
    "merge.after_run",  # the first WAL run streamed into the .log upload, which is unfinished
    "rsm.after_put#1",  # its .log uploaded
    "rsm.after_put#2",  # .log and .indexes uploaded, no manifest
    "merge.after_upload",  # uploaded, not verified
    "copy.before_finished",  # verified, FINISHED not recorded
    "copy.after_finished",  # FINISHED, its batches still in the WAL
    "merge.after_drop",  # one segment done; the partition's others STARTED, uploaded
    "merge.after_started#5",  # partition 1 half prepared, partition 0 done
]


@pytest.mark.parametrize("kill_point", KILL_POINTS)
def test_a_merge_killed_anywhere_then_rerun_loses_and_duplicates_nothing(
    tmp_path: Path, kill_point: str
) -> None:
    world, before = world_with_data(tmp_path)
    killed(world, kill_point)
    finish_and_check(world, before)


def test_a_kill_after_finished_is_healed_by_dropping_not_by_copying_again(tmp_path: Path) -> None:
    world, before = world_with_data(tmp_path)
    killed(world, "copy.after_finished")
    (finished,) = world.store.segments(TOPIC_ID, 0, states=[S.COPY_SEGMENT_FINISHED])
    # The rerun is killed too, right after it healed partition 0.
    killed(world, "merge.after_heal")
    assert world.coordinator.log(TOPIC_ID, 0).diskless_start_offset == finished.end_offset + 1
    output = finish_and_check(world, before)
    assert "removed abandoned attempt" not in output
    segments = world.store.segments(TOPIC_ID, 0)
    assert [s.start_offset for s in segments].count(finished.start_offset) == 1, "copied once"


def test_a_kill_while_cleaning_up_a_killed_merge(tmp_path: Path) -> None:
    world, before = world_with_data(tmp_path)
    killed(world, "merge.after_upload")
    killed(world, "delete.after_started")  # the rerun dies while deleting the abandoned attempt
    output = finish_and_check(world, before)
    assert "removed abandoned attempt" in output
