"""A remote compaction killed with a real SIGKILL at each step boundary, then rerun: the
remote tier ends as an uninterrupted run leaves it. And a reader fetching the whole tier over
and over while a compaction runs never sees an offset twice nor a key's latest record lost.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from tests.support.compaction_data import (
    CHANGELOG,
    DAY_MS,
    cleaned_end,
    expected_after,
    tier_uncleaned,
)
from tests.support.end_state import assert_histories_and_bucket_clean
from tests.support.remote_view import RemoteView, read_remote
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.lifecycle.compaction.supersede import covered_pairs
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.rsm import RemoteStorageError

OWNER = "airflow:remote_compaction:changelog-0"
NOW = datetime.fromtimestamp((NOW_MS + 2 * DAY_MS) / 1000, UTC).isoformat()  # tombstones expire
# Tombstones still within delete.retention.ms: a reader slower than that may miss one that
# expires under it (a deleted key then seems alive), in Kafka as here: that is the setting's
# contract, not the swap's, so the reader test keeps them.
NOW_KEEPING_TOMBSTONES = datetime.fromtimestamp((NOW_MS + 60_000) / 1000, UTC).isoformat()
KILL_POINTS = [
    "compaction.after_started#2",  # two of three new segments STARTED
    "compaction.after_scan",  # the offset map built, nothing uploaded
    "rsm.after_put#2",  # inside the first new segment's upload
    "compaction.after_upload#2",  # two groups uploaded
    "compaction.before_finished",  # the first verified, not FINISHED
    "compaction.after_finished#2",  # two of three FINISHED
    "compaction.before_replace",  # all FINISHED, the clean section moved, nothing deleted
    "delete.after_started#2",  # the second replaced segment DELETE_STARTED
    "delete.after_storage_delete#4",  # the fourth replaced segment's objects gone
]


def world(tmp_path: Path) -> Tiered:
    configs = {"changelog": {"cleanup_policy": "compact", "segment_bytes": 1 << 17}}
    t = build_tiered(
        tmp_path, layout="chunked-encrypted", topics=(CHANGELOG,), topic_configs=configs
    )
    tier_uncleaned(t)
    return t


def run_compact(
    t: Tiered, crash_at: str | None = None, now: str = NOW
) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TIERFLOW_CRASH_AT"}
    env.update(t.settings.as_env())
    if crash_at:
        env["TIERFLOW_CRASH_AT"] = crash_at
    command = [sys.executable, "-m", "tierflow.cli", "compact", "--now", now, "--owner", OWNER]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def assert_as_uninterrupted(t: Tiered, before: RemoteView) -> None:
    after, end = read_remote(t.store, t.rsm, "changelog"), cleaned_end(t)
    assert after.latest() == expected_after(before, NOW_MS + DAY_MS, end)
    in_range = [r.key for r in after.records if r.offset <= end]
    assert len(in_range) == len(set(in_range)) > 100, "each key once"
    topic = t.store.topic("changelog")
    rows = t.store.segments(topic.topic_id, 0)
    live = [r for r in rows if r.state != S.DELETE_SEGMENT_FINISHED]
    assert {r.state for r in live} == {S.COPY_SEGMENT_FINISHED}, "nothing half-done"
    assert covered_pairs(live) == [], "no replaced segment left"
    assert_histories_and_bucket_clean(t, rows, live)


@pytest.mark.parametrize("kill_point", KILL_POINTS)
def test_a_killed_compaction_reruns_to_the_uninterrupted_end(tmp_path: Path, kill_point: str):
    t = world(tmp_path)
    before = read_remote(t.store, t.rsm, "changelog")
    crashed = run_compact(t, kill_point)
    assert crashed.returncode == -signal.SIGKILL, crashed.stdout + crashed.stderr
    rerun = run_compact(t)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert_as_uninterrupted(t, before)


def test_a_reader_during_a_compaction_sees_one_log(tmp_path: Path) -> None:
    """The reader reads the whole tier once before the compaction starts, over and over while
    it runs, and once after it ended; a read that meets a segment deleted under it (or the
    store busy with the compaction's write) starts again, as a consumer fetches again."""
    t = world(tmp_path)
    before = read_remote(t.store, t.rsm, "changelog")
    expected = before.live()
    first, done, reads, problems = threading.Event(), threading.Event(), [], []

    def reader() -> None:
        while True:
            last = done.is_set()
            try:
                view = read_remote(t.store, t.rsm, "changelog")
            except (RemoteStorageError, OperationalError):
                continue
            except Exception as exc:  # anything else is a finding, not a retry
                problems.append(repr(exc))
                first.set()
                return
            offsets = [r.offset for r in view.records]
            if len(offsets) != len(set(offsets)):
                problems.append("an offset twice")
            if view.live() != expected:
                problems.append("a key's latest record differs")
            reads.append(len(offsets))
            first.set()  # the compaction starts after one whole read
            if last:
                return

    thread = threading.Thread(target=reader)
    thread.start()
    first.wait()
    try:
        assert run_compact(t, now=NOW_KEEPING_TOMBSTONES).returncode == 0
    finally:
        done.set()
        thread.join()
    assert problems == [] and len(reads) >= 2, (problems, reads)
    assert reads[-1] < reads[0], "the reader saw the log before and after"
    after = read_remote(t.store, t.rsm, "changelog")
    assert after.latest() == before.latest(), "no tombstone expired"
