"""`tierflow retention` after a DeleteRecords keeps exactly what Kafka's rules keep, in one run
and after a SIGKILL or a Ctrl-C at any step of a run.

The judge is tests/support/retention_oracle.py, written from Kafka's expiration task and not
from the planner. One partition of 46 tiered segments over five leader epochs; a DeleteRecords
moves the log start above the first 20 (the broker writes the new start to
log-start-offset-checkpoint and truncates its leader-epoch cache), and retention.bytes leaves
room for 20 segments and the local tail. Every segment's bytes count once, so 26 go and 20
stay; counting the 20 below the log start twice deleted all 46.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.retention.support import configure, copy_all
from tests.support.retention_oracle import Partition, Seg, expire
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.config import Settings
from tierflow.demo.topics import TopicSpec
from tierflow.kafka.checkpoint import write_offset_checkpoint
from tierflow.kafka.leader_epoch import LEADER_EPOCH_CHECKPOINT, leader_epoch_checkpoint_bytes
from tierflow.lifecycle.retention.remote_plan import truncate_from_start
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_storage, open_store
from tierflow.units import iso_utc

pytestmark = pytest.mark.slow

PROJECT_ROOT = Path(__file__).resolve().parents[2]
TOPIC = "events"
SEGMENTS, BELOW_START, KEPT = 46, 20, 20
LIVE = (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)


def delete_records(t: Tiered, offset: int) -> None:
    """What the broker does for kafka-delete-records: a new log start in its checkpoint, and
    its leader-epoch cache truncated from the start."""
    log_ = t.log(TOPIC, 0)
    root = t.settings.log_dirs[0]
    write_offset_checkpoint(root / "log-start-offset-checkpoint", {(TOPIC, 0): offset})
    entries = truncate_from_start(log_.leader_epoch_entries(), offset)
    (log_.path / LEADER_EPOCH_CHECKPOINT).write_bytes(leader_epoch_checkpoint_bytes(entries))


def live_rows(t: Tiered) -> list:
    topic_id = t.store.topic(TOPIC).topic_id
    return t.store.segments(topic_id, 0, states=list(LIVE))


def oracle_input(t: Tiered) -> tuple[list[Seg], Partition]:
    """The partition as Kafka's expiration task would see it, read from the files and rows."""
    log_ = t.log(TOPIC, 0)
    rows = live_rows(t)
    segs = [
        Seg(
            r.segment_id,
            r.start_offset,
            r.end_offset,
            tuple((e, o) for e, o in r.leader_epochs),
            r.segment_size_bytes,
            r.max_timestamp_ms,
            r.state,
        )
        for r in rows
    ]
    highest = max(r.end_offset for r in rows)
    local = sum(s.size_in_bytes() for s in log_.segments() if s.base_offset > highest)
    topic = t.store.topic(TOPIC)
    partition = Partition(
        log_start=log_.log_start_offset(),
        log_end=log_.log_end_offset(),
        cache=tuple((e.epoch, e.start_offset) for e in log_.leader_epoch_entries()),
        only_local_bytes=local,
        retention_ms=topic.retention_ms,
        retention_bytes=topic.retention_bytes,
        now_ms=NOW_MS,
    )
    return segs, partition


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """46 tiered segments, the log start moved above 20 of them, retention.bytes for 20."""
    base = tmp_path_factory.mktemp("pristine")
    t = build_tiered(base, topics=(TopicSpec(name=TOPIC, partitions=1, segments=SEGMENTS),))
    copy_all(t)
    rows = live_rows(t)
    assert len(rows) == SEGMENTS
    delete_records(t, rows[BELOW_START].start_offset)
    _, partition = oracle_input(t)
    room = partition.only_local_bytes + sum(r.segment_size_bytes for r in rows[-KEPT:])
    configure(t, TOPIC, retention_bytes=room - rows[-KEPT].segment_size_bytes // 2)
    return base


def copy_of(pristine: Path, to: Path) -> Tiered:
    shutil.copytree(pristine, to)
    settings = Settings.embedded(to)
    return Tiered(settings, open_store(settings), open_storage(settings), "plain")


def retention(t: Tiered, **env: str) -> subprocess.CompletedProcess:
    """`tierflow retention` as a person runs it, as of the fixture's clock."""
    environ = {**os.environ, **t.settings.as_env(), "PYTHONPATH": str(PROJECT_ROOT), **env}
    command = [sys.executable, "-m", "tierflow.cli", "retention", "--now", iso_utc(NOW_MS)]
    return subprocess.run(command, env=environ, capture_output=True, text=True, timeout=120)


def kept_spans(t: Tiered) -> list[tuple[int, int]]:
    return [(r.start_offset, r.end_offset) for r in live_rows(t)]


def expected_spans(t: Tiered) -> tuple[list[tuple[int, int]], int]:
    segs, partition = oracle_input(t)
    outcome = expire(segs, partition)
    kept = [(s.start, s.end) for s in segs if s.id not in outcome.deleted]
    return sorted(kept), outcome.log_start


def log_start(t: Tiered) -> int:
    return t.store.partition(t.store.topic(TOPIC).topic_id, 0).log_start_offset


def test_one_run_after_delete_records_keeps_what_kafka_keeps(pristine: Path, tmp_path: Path):
    t = copy_of(pristine, tmp_path / "run")
    kept, start = expected_spans(t)
    assert len(kept) == KEPT  # the oracle's answer: retention.bytes has room for 20
    done = retention(t)
    assert done.returncode == 0, done.stderr
    assert kept_spans(t) == kept
    assert log_start(t) == start == kept[0][0]
    assert retention(t).returncode == 0 and kept_spans(t) == kept  # and stays so


# A run deletes 26 segments, each in four steps; stopped at the log start move, and at every
# step of the first deletion and of the last.
STEPS = ("delete.after_started", "rsm.after_delete", "delete.after_storage_delete")
KILL_POINTS = [
    "retention.after_log_start",
    *(f"{step}#{n}" for n in (1, 26) for step in STEPS),
    *(f"delete.after_finished#{n}" for n in (1, 25)),
]


@pytest.mark.parametrize("how", ["KILL", "INT"], ids=["sigkill", "ctrl-c"])
@pytest.mark.parametrize("point", KILL_POINTS)
def test_a_stopped_run_and_its_rerun_keep_what_kafka_keeps(
    pristine: Path, tmp_path: Path, point: str, how: str
):
    t = copy_of(pristine, tmp_path / "run")
    kept, start = expected_spans(t)
    stopped = retention(t, TIERFLOW_CRASH_AT=point, TIERFLOW_CRASH_SIGNAL=how)
    if how == "KILL":
        assert stopped.returncode == -signal.SIGKILL, stopped.stderr
    else:
        assert stopped.returncode != 0 and "interrupted" in stopped.stderr, stopped.stderr
    assert len(kept_spans(t)) > KEPT  # it stopped before the end
    rerun = retention(t)
    assert rerun.returncode == 0, rerun.stderr
    assert kept_spans(t) == kept
    assert log_start(t) == start
