"""The remote compaction's worker path on several processes (engine.pool, as the DAG runs it
below the Spark threshold): the same tier as one process, and a process killed mid-batch (a
real SIGKILL, in the child) fails only its partition's groups, whose sources stay and whose
new objects finalize removes; the rerun compacts them. The oracle is each key's latest record
as read back through the fetch path before the compaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.end_state import assert_histories_and_bucket_clean
from tests.support.log_cleaner import mark_cleaned
from tests.support.remote_view import read_remote
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.demo.topics import TopicSpec
from tierflow.engine.pool import run_jobs
from tierflow.engine.worker import Worker
from tierflow.faults import ENV_CRASH_AT
from tierflow.kafka.records import CODEC_NONE, CODEC_ZSTD
from tierflow.lifecycle.compaction.finalize import finalize_compaction
from tierflow.lifecycle.compaction.job import CompactionResult
from tierflow.lifecycle.compaction.passes import PARTITION_COMPACTION
from tierflow.lifecycle.compaction.report import CompactionFailedError, CompactionOptions
from tierflow.lifecycle.compaction.swap import prepare_compaction
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

PARTITIONS = 2
NOW = NOW_MS + 60_000
# Kafka's default delete.retention.ms: a tombstone older than this goes with its key.
DELETE_RETENTION_MS = 86_400_000
CHANGELOG = TopicSpec(
    name="changelog",
    partitions=PARTITIONS,
    segments=5,
    codecs=(CODEC_NONE, CODEC_ZSTD),
    transactional=True,
)


@pytest.fixture
def t(tmp_path: Path) -> Tiered:
    t = build_tiered(
        tmp_path,
        topics=(CHANGELOG,),
        topic_configs={"changelog": {"cleanup_policy": "compact", "segment_bytes": 1 << 20}},
    )
    topic_id = t.store.topic("changelog").topic_id
    for partition in range(PARTITIONS):
        log_ = t.log("changelog", partition)
        bases = [s.base_offset for s in log_.segments()]
        mark_cleaned(log_.path, bases[-1])  # tiered as the cleaner left it: uncleaned
        copy_partition(log_, t.store, t.rsm, owner="test")
        t.store.advance_local_log_start_offset(
            topic_id, partition, bases[-1], actor="test", now_ms=NOW_MS
        )
    return t


def compact_on_two_processes(t: Tiered) -> list[str]:
    """Prepare each partition, run both jobs in two processes, finalize each: the errors."""
    topic_id = t.store.topic("changelog").topic_id
    options = CompactionOptions(now_ms=NOW)
    plans = [
        prepare_compaction(t.store, t.rsm, topic_id, p, options, owner=f"test:{p}")
        for p in range(PARTITIONS)
    ]
    jobs = [plan.job for plan in plans if plan.job is not None]
    assert len(jobs) == PARTITIONS
    worker = Worker(t.settings)
    rows = [
        row
        for _job, done in run_jobs(PARTITION_COMPACTION, jobs, worker, workers=2)
        for row in done
    ]
    results = {row["segment_id"]: CompactionResult.from_dict(row) for row in rows}
    errors = []
    for plan in plans:
        try:
            finalize_compaction(plan, results, t.store, t.rsm)
        except CompactionFailedError as exc:
            errors.append(str(exc))
    return errors


def latest(t: Tiered) -> list[dict]:
    return [read_remote(t.store, t.rsm, "changelog", p).latest() for p in range(PARTITIONS)]


def assert_compacted(t: Tiered, before: list[dict]) -> None:
    """Each key's latest record as before (less the tombstones in the range older than
    delete.retention.ms), each key once in the range, the bucket clean."""
    topic_id = t.store.topic("changelog").topic_id
    for partition in range(PARTITIONS):
        view = read_remote(t.store, t.rsm, "changelog", partition)
        end = t.store.partition(topic_id, partition).remote_cleaned_offset
        horizon = NOW - DELETE_RETENTION_MS
        expected = {
            key: r
            for key, r in before[partition].items()
            if not (r.value is None and r.timestamp < horizon and r.offset <= end)
        }
        assert view.latest() == expected, f"changelog-{partition}"
        keys = [r.key for r in view.records if r.offset <= end]
        assert len(keys) == len(set(keys)) > 0, f"changelog-{partition} compacted"
    rows = [r for p in range(PARTITIONS) for r in t.store.segments(topic_id, p)]
    live = [r for r in rows if r.state == S.COPY_SEGMENT_FINISHED]
    assert_histories_and_bucket_clean(t, rows, live)


def test_two_processes_compact_both_partitions(t: Tiered) -> None:
    before = latest(t)
    assert compact_on_two_processes(t) == []
    assert_compacted(t, before)


def test_a_killed_compaction_process_fails_its_groups_and_the_rerun_compacts(
    t: Tiered, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = latest(t)
    monkeypatch.setenv(ENV_CRASH_AT, "compaction.worker")  # the spawned processes inherit it
    errors = compact_on_two_processes(t)
    assert errors and all("the process compacting it died" in e for e in errors), errors
    monkeypatch.delenv(ENV_CRASH_AT)
    assert latest(t) == before, "the sources stay"
    assert compact_on_two_processes(t) == []
    assert_compacted(t, before)
