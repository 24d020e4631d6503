"""The diskless merge's worker path on several processes (engine.pool): the same end state as
one process, and a process killed mid-batch (a real SIGKILL, in the child) fails only its
partition's segments, which finalize removes and the rerun merges; nothing is lost, merged
twice or left in the bucket."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.diskless.diskless_support import TOPIC_ID
from tests.diskless.merge_support import (
    PARTITIONS,
    Consolidated,
    assert_merged_exactly_once,
    bucket_files,
    consolidated,
    expected_files,
)
from tierflow.diskless.merge import prepare_merge
from tierflow.diskless.merge_job import merge_jobs
from tierflow.engine.worker import Worker
from tierflow.faults import ENV_CRASH_AT
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.copy.plan import CopyFailedError

OWNER = "test:merge_in_processes"


def merge_on_two_processes(world: Consolidated) -> None:
    """prepare every partition, merge them all in two processes, finalize each."""
    plans = [
        prepare_merge(
            world.coordinator, world.store, world.rsm, TOPIC_ID, p, world.options(), owner=OWNER
        )
        for p in range(PARTITIONS)
    ]
    jobs = [plan.job for plan in plans if plan.job is not None]
    assert len(jobs) == PARTITIONS
    results = {r.segment_id: r for r in merge_jobs(jobs, Worker(world.settings), workers=2)}
    failures = []
    for plan in plans:
        try:
            world.finalize(plan, results, owner=OWNER)
        except CopyFailedError as exc:
            failures.append(str(exc))
    if failures:
        raise CopyFailedError("; ".join(failures))


def world_with_data(tmp_path: Path) -> tuple[Consolidated, dict[int, list[bytes]]]:
    world = consolidated(tmp_path, objects=3, committed_at=wall_clock_ms() - 60_000)
    return world, {p: world.read_all(p) for p in range(PARTITIONS)}


def test_two_processes_merge_what_one_does(tmp_path: Path) -> None:
    world, before = world_with_data(tmp_path)
    merge_on_two_processes(world)
    assert_merged_exactly_once(world, before)
    assert bucket_files(world) == expected_files(world)
    for partition in range(PARTITIONS):
        log = world.coordinator.log(TOPIC_ID, partition)
        assert log.diskless_start_offset == log.high_watermark, "everything merged"


def test_a_killed_merge_process_fails_its_partition_and_the_rerun_merges_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world, before = world_with_data(tmp_path)
    monkeypatch.setenv(ENV_CRASH_AT, "merge.worker")  # the spawned processes inherit it
    with pytest.raises(CopyFailedError, match="the process merging it died"):
        merge_on_two_processes(world)
    monkeypatch.delenv(ENV_CRASH_AT)
    assert bucket_files(world) == expected_files(world), "the failed attempts left nothing"
    merge_on_two_processes(world)
    assert_merged_exactly_once(world, before)
    assert bucket_files(world) == expected_files(world)
