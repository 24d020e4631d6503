"""SIGKILL complete_disable (delete) at each step boundary, rerun it, and check the end state:
DISABLED, nothing of the topic left in the bucket, every segment history valid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.disablement.support import bucket_files, live, live_keys
from tests.support.tiered import NOW_MS, Tiered
from tierflow.lifecycle.disablement import request_disable
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import TieredState, is_valid_segment_transition


def run_worker(t: Tiered, crash_at: str | None) -> subprocess.CompletedProcess:
    env = {**os.environ, **t.settings.as_env()}
    env.pop("TIERFLOW_CRASH_AT", None)
    if crash_at:
        env["TIERFLOW_CRASH_AT"] = crash_at
    command = [sys.executable, "-m", "tests.disablement.crash_worker", "orders", str(NOW_MS)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


KILL_POINTS = [
    "disable.after_log_start",  # log start moved, nothing deleted
    "delete.after_started#1",  # first segment DELETE_SEGMENT_STARTED, objects still there
    "delete.after_storage_delete#2",  # second segment's objects gone, state not finished
    "disable.before_finish",  # everything deleted, still DISABLING
]


@pytest.mark.parametrize("kill_point", KILL_POINTS)
def test_killed_disable_is_finished_by_the_rerun(tiered: Tiered, kill_point: str) -> None:
    t = tiered
    request_disable(t.store, "orders", policy="delete", actor="test", now_ms=NOW_MS)
    killed = run_worker(t, kill_point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert t.store.topic("orders").state is TieredState.DISABLING

    rerun = run_worker(t, None)
    assert rerun.returncode == 0, rerun.stderr
    topic = t.store.topic("orders")
    assert topic.state is TieredState.DISABLED
    assert not any("orders" in key for key in bucket_files(t))
    assert bucket_files(t) == live_keys(t)
    for partition in t.store.partitions(topic.topic_id):
        assert live(t, "orders", partition.partition) == []
        assert (partition.lease_owner, partition.highest_remote_offset) == (None, -1)
        for row in t.store.segments(topic.topic_id, partition.partition):
            previous = None
            for event in t.store.events(segment_id=row.segment_id):
                assert event.from_state == previous
                assert is_valid_segment_transition(
                    None if previous is None else S(previous), S(event.to_state)
                )
                previous = event.to_state
            assert previous == S.DELETE_SEGMENT_FINISHED
