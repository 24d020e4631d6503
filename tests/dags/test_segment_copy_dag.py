"""The segment_copy DAG run by Airflow itself (dag.test), including a worker killed midway and
the cleared rerun that on-call would start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.compacted_copy import (
    CHANGELOG,
    finished_changelog_ranges,
    merge_across_the_boundary,
)
from tests.support.segment_copy_dag import live_segments, run_dag
from tests.support.tiered import build_tiered, eligible
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_dag_copies_every_eligible_segment(tmp_path: Path):
    t = build_tiered(tmp_path)
    assert run_dag(tmp_path, t.settings.as_env(), "run1") == "success"
    for log_ in t.logs():
        assert live_segments(t, log_.topic, log_.partition) == [
            (start, end, S.COPY_SEGMENT_FINISHED) for start, end in eligible(log_)
        ]
    # The next scheduled run finds nothing new to do.
    keys = sorted(t.rsm.objects.list())
    assert run_dag(tmp_path, t.settings.as_env(), "run2") == "success"
    assert sorted(t.rsm.objects.list()) == keys


@pytest.mark.parametrize(
    ("crash_at", "max_shards"),
    [
        ("copy.before_finished#2", "16"),  # a shard of one partition, killed in finalize
        ("copy.after_started#3", "1"),  # one shard of every partition, killed in prepare
    ],
)
def test_worker_killed_midway_then_cleared_run_finishes_the_job(
    tmp_path: Path, crash_at: str, max_shards: str
):
    t = build_tiered(tmp_path, max_shards=int(max_shards))
    crashing = {**t.settings.as_env(), "TIERFLOW_CRASH_AT": crash_at}
    with pytest.raises(RuntimeError, match="did not complete"):
        run_dag(tmp_path, crashing, "killed")
    stuck = [
        r
        for log_ in t.logs()
        for r in t.store.segments(t.store.topic(log_.topic).topic_id, log_.partition)
        if r.state == S.COPY_SEGMENT_STARTED
    ]
    assert stuck, "the kill left COPY_SEGMENT_STARTED attempts behind"

    env = {k: v for k, v in t.settings.as_env().items()}
    os.environ.pop("TIERFLOW_CRASH_AT", None)
    assert run_dag(tmp_path, env, "cleared") == "success"
    for row in stuck:
        assert t.store.segment(row.segment_id).state == S.DELETE_SEGMENT_FINISHED
    expected_keys = set()
    for log_ in t.logs():
        assert live_segments(t, log_.topic, log_.partition) == [
            (start, end, S.COPY_SEGMENT_FINISHED) for start, end in eligible(log_)
        ]
        topic_id = t.store.topic(log_.topic).topic_id
        for row in t.store.segments(topic_id, log_.partition, states=[S.COPY_SEGMENT_FINISHED]):
            expected_keys |= {o.key for o in t.store.segment_objects(row.segment_id)}
    on_disk = {p.relative_to(t.bucket()).as_posix() for p in t.bucket().rglob("*") if p.is_file()}
    assert on_disk == expected_keys


def test_batches_above_the_threshold_are_rewritten_by_spark(tmp_path: Path):
    t = build_tiered(tmp_path, spark_threshold_bytes=1)
    assert run_dag(tmp_path, t.settings.as_env(), "spark") == "success"
    log_text = (tmp_path / "spark.log").read_text()
    assert "spark-submit --master local[*]" in log_text, "submitted through spark_default"
    expected = sum(len(eligible(log_)) for log_ in t.logs())
    assert f"rewrote {expected} of {expected} segments" in log_text
    for log_ in t.logs():
        assert live_segments(t, log_.topic, log_.partition) == [
            (start, end, S.COPY_SEGMENT_FINISHED) for start, end in eligible(log_)
        ]


def test_a_compacted_topics_slice_is_rewritten_by_spark(tmp_path: Path):
    """The log cleaner merged copied segments with later ones: the DAG's Spark executors
    upload the merged segment's tail (the slice) and the segment after it, as the in-process
    copy does (tests/lifecycle/test_compacted_copy.py)."""
    t = build_tiered(
        tmp_path,
        topics=(CHANGELOG,),
        topic_configs={"changelog": {"cleanup_policy": "compact"}},
        spark_threshold_bytes=1,
    )
    first = merge_across_the_boundary(t)
    assert run_dag(tmp_path, t.settings.as_env(), "compacted") == "success"
    assert "rewrote 2 of 2 segments" in (tmp_path / "compacted.log").read_text()
    assert finished_changelog_ranges(t) == [(first[i], first[i + 1] - 1) for i in range(6)]
    checks = verify_partition(t.log("changelog", 0), t.store.topic("changelog"), t.store, t.rsm)
    assert [c.identical for c in checks][-2:] == [True, True], checks
