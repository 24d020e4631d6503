"""Local retention (L1-L7) against a generated broker log dir whose segments were tiered:
a local segment goes only once its remote copy is COPY_SEGMENT_FINISHED, oldest first."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.retention.support import (
    ACTOR,
    HOUR_MS,
    add_remote_segment,
    configure,
    copy_all,
    rows,
)
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.lifecycle.retention.local import (
    LocalRetentionError,
    execute_local_retention,
    plan_local_retention,
    segment_files,
)
from tierflow.metadata.states import RemoteLogSegmentState as S

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def plan_for(t: Tiered, topic: str, partition: int, *, now_ms: int = NOW_MS):
    return plan_local_retention(
        t.log(topic, partition), t.store, t.store.topic(topic), now_ms=now_ms
    )


def execute(t: Tiered, plan, *, delete_files: bool = True):
    return execute_local_retention(
        plan,
        t.log(plan.topic, plan.partition),
        t.store,
        delete_files=delete_files,
        actor=ACTOR,
        clock=lambda: NOW_MS,
    )


def bases(log_: PartitionLog) -> list[int]:
    return [s.base_offset for s in log_.segments()]


def local_start(t: Tiered, topic: str, partition: int) -> tuple[int, int]:
    state = t.store.partition(t.store.topic(topic).topic_id, partition)
    return state.log_start_offset, state.local_log_start_offset


def test_time_retention_deletes_the_oldest_tiered_segments_and_all_their_files(tiered: Tiered):
    log_ = tiered.log("orders", 0)
    assert bases(log_) == [0, 589, 1208, 1779], "generator changed; adjust the test"
    configure(tiered, "orders", local_retention_ms=30 * HOUR_MS)
    plan = plan_for(tiered, "orders", 0)
    assert [(d.base_offset, d.next_offset, d.reason) for d in plan.deletions] == [
        (0, 589, "local.retention.ms"),
        (589, 1208, "local.retention.ms"),
    ]
    finished = rows(tiered, "orders", 0, S.COPY_SEGMENT_FINISHED)
    assert [d.remote_segment_ids for d in plan.deletions] == [
        (finished[0].segment_id,),
        (finished[1].segment_id,),
    ]
    assert plan.new_local_log_start_offset == 1208
    files = [p for b in (0, 589) for p in segment_files(log_, b) if p.exists()]
    assert {p.suffix for p in files} == {".log", ".index", ".timeindex", ".txnindex", ".snapshot"}

    report = execute(tiered, plan)
    assert not report.dry_run and report.segments == [0, 589]
    assert sorted(report.files) == sorted(str(p) for p in files)
    assert not any(p.exists() for p in files)
    assert bases(log_) == [1208, 1779]
    assert log_.snapshot_offsets() == [1208, 1779]
    # L5: only the local log start moves; the data is still remote.
    assert local_start(tiered, "orders", 0) == (0, 1208)
    assert plan_for(tiered, "orders", 0).deletions == []  # idempotent


def test_size_retention_counts_every_local_segment(tiered: Tiered):
    log_ = tiered.log("orders", 0)
    sizes = [s.size_in_bytes() for s in log_.segments()]
    configure(tiered, "orders", local_retention_bytes=sum(sizes) - sizes[0])
    plan = plan_for(tiered, "orders", 0)
    assert [(d.base_offset, d.reason, d.size_bytes) for d in plan.deletions] == [
        (0, "local.retention.bytes", sizes[0])
    ]
    configure(tiered, "orders", local_retention_bytes=sum(sizes) - sizes[0] + 1)
    assert plan_for(tiered, "orders", 0).deletions == []


def test_minus_two_means_same_as_retention_and_copy_disabled_uses_retention(tiered: Tiered):
    configure(tiered, "orders", retention_ms=30 * HOUR_MS)  # local.retention.ms stays -2
    plan = plan_for(tiered, "orders", 0)
    assert (plan.retention_ms, plan.retention_bytes) == (30 * HOUR_MS, -1)
    assert [(d.base_offset, d.reason) for d in plan.deletions] == [
        (0, "local.retention.ms"),
        (589, "local.retention.ms"),
    ]
    configure(tiered, "orders", remote_log_copy_disable=True)
    plan = plan_for(tiered, "orders", 0)
    assert plan.retention_ms == 30 * HOUR_MS
    assert [d.reason for d in plan.deletions] == ["retention.ms", "retention.ms"]


def test_never_deletes_before_the_copy_finished_when_the_copy_is_behind(tmp_path: Path):
    t = build_tiered(tmp_path)  # nothing copied yet
    configure(t, "payments", local_retention_ms=HOUR_MS)
    t.store.ensure_partition(
        t.store.topic("payments").topic_id, 0, log_start_offset=0, local_log_start_offset=0
    )
    plan = plan_for(t, "payments", 0)
    assert plan.deletions == []
    assert "00000000000000000000.log breaches local.retention.ms" in plan.blocked[0]
    assert "no COPY_SEGMENT_FINISHED remote copy" in plan.blocked[0]

    # A copy in progress (COPY_SEGMENT_STARTED) does not count either.
    add_remote_segment(t, "payments", 0, 0, 728, [(0, 0)], finished=False)
    assert plan_for(t, "payments", 0).deletions == []
    copy_all(t)
    assert [d.base_offset for d in plan_for(t, "payments", 0).deletions] == [0, 729]


def test_the_high_watermark_and_the_copy_hold_back_a_lagging_partition(tiered: Tiered):
    log_ = tiered.log("orders", 1)
    assert bases(log_) == [0, 585, 1147, 1728] and log_.high_watermark() == 1455
    configure(tiered, "orders", local_retention_ms=HOUR_MS)
    plan = plan_for(tiered, "orders", 1)
    assert [d.base_offset for d in plan.deletions] == [0, 585]
    assert plan.blocked == [
        "00000000000000001147.log breaches local.retention.ms but the high watermark 1455 "
        "is below its end 1728"
    ]


def test_finished_without_object_rows_is_not_enough(tmp_path: Path):
    t = build_tiered(tmp_path)
    configure(t, "payments", local_retention_ms=HOUR_MS)
    t.store.ensure_partition(
        t.store.topic("payments").topic_id, 0, log_start_offset=0, local_log_start_offset=0
    )
    bare = add_remote_segment(t, "payments", 0, 0, 728, [(0, 0)])
    plan = plan_for(t, "payments", 0)
    assert plan.deletions == []
    assert f"remote segment {bare} has no remote_segment_objects rows" in plan.blocked[0]


def test_only_a_prefix_goes(tiered: Tiered):
    """The middle segment lost its remote copy: the newer ones stay even though copied."""
    topic = tiered.store.topic("orders")
    middle = rows(tiered, "orders", 0, S.COPY_SEGMENT_FINISHED)[1]
    delete_remote_segment(tiered.store, tiered.rsm, topic, middle, actor="test", now_ms=NOW_MS)
    configure(tiered, "orders", local_retention_ms=HOUR_MS)
    plan = plan_for(tiered, "orders", 0)
    assert [d.base_offset for d in plan.deletions] == [0]
    assert plan.blocked[0].startswith("00000000000000000589.log breaches local.retention.ms")
    execute(tiered, plan)
    assert bases(tiered.log("orders", 0)) == [589, 1208, 1779]


def test_the_active_segment_is_never_deleted(tiered: Tiered):
    configure(tiered, "payments", local_retention_ms=0)
    plan = plan_for(tiered, "payments", 0, now_ms=NOW_MS + 1000 * HOUR_MS)
    log_ = tiered.log("payments", 0)
    assert [d.base_offset for d in plan.deletions] == bases(log_)[:-1]
    execute(tiered, plan)
    assert bases(log_) == [1471]


def test_dry_mode_reports_what_would_be_freed_and_changes_nothing(tiered: Tiered):
    log_ = tiered.log("orders", 0)
    configure(tiered, "orders", local_retention_ms=30 * HOUR_MS)
    plan = plan_for(tiered, "orders", 0)
    events = len(tiered.store.events())
    report = execute(tiered, plan, delete_files=False)
    expected = [p for b in (0, 589) for p in segment_files(log_, b) if p.exists()]
    assert report.dry_run and report.segments == [0, 589]
    assert report.freed_bytes == sum(p.stat().st_size for p in expected)
    assert report.freed_bytes > plan.total_bytes  # indexes and snapshots on top of the .log
    assert report.new_local_log_start_offset is None
    assert bases(log_) == [0, 589, 1208, 1779]
    assert local_start(tiered, "orders", 0) == (0, 0)
    assert len(tiered.store.events()) == events


def test_refuses_to_unlink_when_the_remote_copy_went_away_after_planning(tiered: Tiered):
    topic = tiered.store.topic("orders")
    configure(tiered, "orders", local_retention_ms=30 * HOUR_MS)
    plan = plan_for(tiered, "orders", 0)
    second = rows(tiered, "orders", 0, S.COPY_SEGMENT_FINISHED)[1]
    delete_remote_segment(tiered.store, tiered.rsm, topic, second, actor="remote", now_ms=NOW_MS)
    with pytest.raises(LocalRetentionError, match=r"00000000000000000589\.log: refusing"):
        execute(tiered, plan)
    assert bases(tiered.log("orders", 0)) == [0, 589, 1208, 1779]  # nothing touched
    assert local_start(tiered, "orders", 0) == (0, 0)


def test_topic_without_remote_storage_is_left_to_the_broker(tiered: Tiered):
    configure(tiered, "payments", remote_storage_enable=False)
    plan = plan_for(tiered, "payments", 0)
    assert plan.deletions == [] and "remote.storage.enable=false" in (plan.skipped or "")


def run_worker(t: Tiered, kind: str, crash_at: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, **t.settings.as_env(), "PYTHONPATH": str(PROJECT_ROOT)}
    env.pop("TIERFLOW_CRASH_AT", None)
    if crash_at:
        env["TIERFLOW_CRASH_AT"] = crash_at
    command = [
        sys.executable,
        "-m",
        "tests.retention.crash_worker",
        kind,
        "orders",
        "0",
        str(NOW_MS),
    ]
    return subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT
    )


def test_local_log_start_advances_before_files_go_and_a_rerun_finishes(tiered: Tiered):
    configure(tiered, "orders", local_retention_ms=30 * HOUR_MS)
    crashed = run_worker(tiered, "local", "local_retention.after_local_start")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert local_start(tiered, "orders", 0) == (0, 1208)
    assert bases(tiered.log("orders", 0)) == [0, 589, 1208, 1779]  # the files are still there
    # The rerun finds them below the local log start (L7) and finishes.
    plan = plan_for(tiered, "orders", 0)
    assert [(d.base_offset, d.reason) for d in plan.deletions] == [
        (0, "log-start-offset"),
        (589, "log-start-offset"),
    ]
    rerun = run_worker(tiered, "local", None)
    assert rerun.returncode == 0, rerun.stderr
    assert bases(tiered.log("orders", 0)) == [1208, 1779]


def test_remote_log_start_advances_before_a_killed_delete(tiered: Tiered):
    configure(tiered, "orders", retention_ms=30 * HOUR_MS)
    crashed = run_worker(tiered, "remote", "retention.after_log_start")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert local_start(tiered, "orders", 0)[0] == 1208
    assert len(rows(tiered, "orders", 0, S.COPY_SEGMENT_FINISHED)) == 3  # nothing deleted yet
    assert run_worker(tiered, "remote", "delete.after_started").returncode == -signal.SIGKILL
    assert run_worker(tiered, "remote", None).returncode == 0
    live = rows(tiered, "orders", 0, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)
    assert [(r.start_offset, r.state) for r in live] == [(1208, S.COPY_SEGMENT_FINISHED)]


def test_segments_whose_remote_copy_expired_first_are_left_to_the_broker(tiered: Tiered):
    """Remote retention ran first and removed the copies (and raised both start offsets, L6):
    the local files stay, and the plan says why."""
    from tierflow.lifecycle.retention.remote import (
        execute_remote_retention,
        plan_partition_retention,
    )

    configure(tiered, "orders", retention_ms=30 * HOUR_MS)
    topic = tiered.store.topic("orders")
    remote = plan_partition_retention(
        tiered.store,
        topic,
        tiered.store.partition(topic.topic_id, 0),
        now_ms=NOW_MS,
        log_=tiered.log("orders", 0),
    )
    execute_remote_retention(remote, tiered.store, tiered.rsm, actor=ACTOR, clock=lambda: NOW_MS)
    assert local_start(tiered, "orders", 0) == (1208, 1208)
    plan = plan_for(tiered, "orders", 0)
    assert plan.deletions == []
    assert "00000000000000000000.log breaches log-start-offset" in plan.blocked[0]
    assert "left to the broker's own retention" in plan.blocked[0]
