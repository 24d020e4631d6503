"""The diskless_merge DAG run by Airflow itself (dag.test): a worker killed in the middle and the
next run finishing the job, and the Spark path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.diskless.diskless_support import TOPIC_ID
from tests.diskless.merge_support import (
    PARTITIONS,
    SEGMENT_BYTES,
    Consolidated,
    assert_merged_exactly_once,
    bucket_files,
    consolidated,
    expected_files,
)
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
CONF = {"min_age_minutes": 0, "segment_bytes": SEGMENT_BYTES}


def run_dag(base: Path, world: Consolidated, name: str, **env: str) -> str:
    os.environ.pop("TIERFLOW_CRASH_AT", None)
    return run_dag_in_subprocess(
        "diskless_merge",
        project=PROJECT,
        airflow_home=base / "airflow",
        extra_env={**world.settings.as_env(), **env},
        log_file=base / f"{name}.log",
        run_conf=CONF,
    )


def world_with_data(tmp_path: Path, **settings: object) -> tuple[Consolidated, dict]:
    world = consolidated(
        tmp_path / "data", objects=3, committed_at=wall_clock_ms() - 60_000, **settings
    )
    return world, {p: world.read_all(p) for p in range(PARTITIONS)}


def test_a_worker_killed_after_finished_then_the_next_run_finishes_the_merge(tmp_path: Path):
    world, before = world_with_data(tmp_path)
    with pytest.raises(RuntimeError, match="did not complete"):
        run_dag(tmp_path, world, "killed", TIERFLOW_CRASH_AT="copy.after_finished#2")
    finished = {
        p: world.store.segments(TOPIC_ID, p, states=[S.COPY_SEGMENT_FINISHED])
        for p in range(PARTITIONS)
    }
    (partition,) = [p for p, rows in finished.items() if rows]
    assert len(finished[partition]) == 2, "killed in finalize, after a second FINISHED"
    wal = world.coordinator.partition_batches(TOPIC_ID, partition)
    assert wal[0].base_offset <= finished[partition][-1].end_offset, "not yet dropped"

    assert run_dag(tmp_path, world, "next") == "success"
    assert_merged_exactly_once(world, before)
    assert bucket_files(world) == expected_files(world)
    log_text = (tmp_path / "next.log").read_text()
    assert "removing abandoned COPY_SEGMENT_STARTED segment" in log_text
    for partition in range(PARTITIONS):
        log = world.coordinator.log(TOPIC_ID, partition)
        assert log.diskless_start_offset == log.high_watermark


def test_batches_above_the_threshold_are_merged_by_spark(tmp_path: Path):
    world, before = world_with_data(tmp_path, spark_threshold_bytes=1)
    assert run_dag(tmp_path, world, "spark") == "success"
    log_text = (tmp_path / "spark.log").read_text()
    assert "spark-submit --master local[*]" in log_text, "submitted through spark_default"
    segments = sum(
        len(world.store.segments(TOPIC_ID, p, states=[S.COPY_SEGMENT_FINISHED]))
        for p in range(PARTITIONS)
    )
    assert f"merged {segments} of {segments} segments from {PARTITIONS} partitions" in log_text
    assert_merged_exactly_once(world, before)
    assert bucket_files(world) == expected_files(world)


def test_the_dags_are_wired_as_the_issue_asks():
    from datetime import timedelta

    from airflow.dag_processing.dagbag import DagBag
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    bag = DagBag(dag_folder=str(PROJECT / "dags"))
    merge, gc = bag.dags["diskless_merge"], bag.dags["diskless_gc"]
    assert merge.timetable.expression == "*/15 * * * *" and merge.max_active_runs == 1
    assert gc.timetable.expression == "0 * * * *" and gc.max_active_runs == 1
    assert set(merge.params) == {
        "min_age_minutes",
        "topic",
        "segment_bytes",
        "max_segments_per_partition",
        "dry_run",
    }
    for task_id in ("prepare", "finalize"):
        mapped = merge.get_task(task_id)
        assert type(mapped).__name__.endswith("MappedOperator"), "one task per partition"
    prepare = merge.get_task("prepare")
    assert prepare.pool == "tierflow_diskless"
    assert prepare.retry_exponential_backoff == 2.0
    assert prepare.retry_delay == timedelta(seconds=30)
    spark = merge.get_task("merge_with_spark")
    assert isinstance(spark, SparkSubmitOperator) and spark.pool == "tierflow_spark"
    assert spark.application.endswith("spark_apps/merge_wal_segments.py")
    finalize = merge.get_task("finalize")
    assert {"merge_with_spark", "merge_in_worker"} <= finalize.upstream_task_ids
    assert finalize.trigger_rule == "all_done"
    assert {t.pool for t in gc.tasks} == {"tierflow_diskless"}
    pools = (PROJECT / "airflow_settings.yaml").read_text()
    assert "pool_name: tierflow_diskless" in pools
