"""The remote_compaction DAG run by Airflow itself (dag.test), on SQLite in the worker and on
PostgreSQL through Spark's shuffle; a worker killed between FINISHED and the deletes, and the
next run rolling the swap forward."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.compaction_data import (
    CHANGELOG,
    DAY_MS,
    cleaned_end,
    expected_after,
    finished_changelog_rows,
    tier_uncleaned,
)
from tests.support.remote_view import RemoteView, read_remote
from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.clock import wall_clock_ms

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def run_dag(base: Path, t: Tiered, name: str, **env: str) -> str:
    os.environ.pop("TIERFLOW_CRASH_AT", None)
    return run_dag_in_subprocess(
        "remote_compaction",
        project=PROJECT,
        airflow_home=base / "airflow",
        extra_env={**t.settings.as_env(), **env},
        log_file=base / f"{name}.log",
    )


def tiered_changelog(tmp_path: Path, db_url: str | None = None, **settings: object) -> Tiered:
    configs = {"changelog": {"cleanup_policy": "compact", "segment_bytes": 1 << 17}}
    extra = {"db_url": db_url} if db_url else {}
    t = build_tiered(
        tmp_path / "data",
        layout="chunked-encrypted",
        topics=(CHANGELOG,),
        topic_configs=configs,
        **extra,
        **settings,
    )
    tier_uncleaned(t)
    return t


def assert_compacted(t: Tiered, before: RemoteView, started_ms: int) -> None:
    """Every key's latest record as before, tombstones older than a day gone (the generated
    records are weeks old), each key once in the compacted range."""
    after, end = read_remote(t.store, t.rsm, "changelog"), cleaned_end(t)
    assert after.latest() == expected_after(before, started_ms - DAY_MS, end)
    in_range = [r.key for r in after.records if r.offset <= end]
    assert len(in_range) == len(set(in_range)) > 100
    assert all(r.value is not None for r in after.records if r.offset <= end)


def test_spark_compacts_the_tiered_changelog_on_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    """PostgreSQL as the store, and a batch big enough for Spark (threshold 1): the shuffle."""
    t = tiered_changelog(tmp_path, postgres_url, spark_threshold_bytes=1)
    before, started = read_remote(t.store, t.rsm, "changelog"), wall_clock_ms()
    sources = len(finished_changelog_rows(t))
    assert run_dag(tmp_path, t, "spark") == "success"
    assert_compacted(t, before, started)
    assert len(finished_changelog_rows(t)) < sources
    log_text = (tmp_path / "spark.log").read_text()
    assert "spark-submit --master local[*]" in log_text
    assert "compacted 1 partitions: 3 groups (3 written)" in log_text


def test_a_worker_killed_before_the_deletes_then_the_next_run_finishes_the_swap(
    tmp_path: Path,
) -> None:
    """SQLite as the store, the batch in the worker."""
    t = tiered_changelog(tmp_path)
    before, started = read_remote(t.store, t.rsm, "changelog"), wall_clock_ms()
    with pytest.raises(RuntimeError, match="did not complete"):
        run_dag(tmp_path, t, "killed", TIERFLOW_CRASH_AT="compaction.before_replace")
    assert_compacted(t, before, started)  # both generations FINISHED: one view all the same
    assert run_dag(tmp_path, t, "next") == "success"
    assert "a compaction replaced it" in (tmp_path / "next.log").read_text()
    assert_compacted(t, before, started)
    starts = [r.start_offset for r in finished_changelog_rows(t)]
    assert len(starts) == len(set(starts)), "the replaced segments are gone"


def test_the_dag_is_wired_as_the_issue_asks() -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(PROJECT / "dags"))
    dag = bag.dags["remote_compaction"]
    assert dag.timetable.expression == "0 3 * * *" and dag.max_active_runs == 1
    assert set(dag.params) == {"topic", "force", "dry_run"}
    prepare = dag.get_task("prepare")
    assert type(prepare).__name__.endswith("MappedOperator"), "mapped over shards"
    assert prepare.pool == "tierflow_compaction"
    assert dag.get_task("compact_with_spark").pool == "tierflow_spark"
