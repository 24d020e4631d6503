"""The partition_restore DAG run by Airflow itself (dag.test) from its Param form: the dry run
(the default) writes nothing and says what it would; switched off, it restores the topic's
partitions byte for byte, records each restore with the task instance, and a rerun changes
and records nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.restored import assert_restored_as_written
from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def test_a_restore_from_the_form_dry_run_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = build_tiered(tmp_path / "data", layout="chunked-encrypted")
    use_settings(monkeypatch, t.settings)
    assert main(["copy", "--owner", "test"]) == 0
    target = tmp_path / "restored"
    os.environ.pop("TIERFLOW_CRASH_AT", None)

    def run(
        name: str, spark_threshold_bytes: int = 1 << 30, env: dict | None = None, **conf: object
    ) -> str:
        env = {
            **t.settings.as_env(),
            "TIERFLOW_SPARK_THRESHOLD_BYTES": str(spark_threshold_bytes),
            **(env or {}),
        }
        return run_dag_in_subprocess(
            "partition_restore",
            project=PROJECT,
            airflow_home=tmp_path / "airflow",
            extra_env=env,
            log_file=tmp_path / f"{name}.log",
            run_conf={"topic": "orders", "to": str(target), **conf},
        )

    assert run("dry") == "success"
    assert not target.exists(), "a dry run writes nothing"
    dry_log = (tmp_path / "dry.log").read_text()
    assert "orders-0: would restore 3 segments" in dry_log
    ran = {
        line.split("task_id=")[1].split()[0]
        for line in dry_log.splitlines()
        if "[DAG TEST] starting" in line
    }
    assert ran == {"plan_restore"}, "a dry run writes no segment and no file"
    # Partition 0 is small: written in the worker, on two processes of the engine's pool (the
    # crash trace's pids: each segment in a child of the task's process). Then the whole topic,
    # above the threshold: Spark writes only partition 1's segments; partition 0 is restored.
    trace = tmp_path / "trace"
    two = {"TIERFLOW_WORKER_PROCESSES": "2", "TIERFLOW_CRASH_TRACE": str(trace)}
    assert run("worker", env=two, dry_run=False, partitions=[0]) == "success"
    assert_restored_as_written(t.store, t.log("orders", 0), target)
    points = [line.split("\t")[:2] for line in trace.read_text().splitlines()]
    children = [pid for pid, point in points if point.startswith("restore.worker#")]
    task = {pid for pid, point in points if point.startswith("restore.after_segment#")}
    assert len(children) == 3 and len(set(children)) == 2, points
    assert len(task) == 1 and not task & set(children), points
    assert run("spark", spark_threshold_bytes=1, dry_run=False) == "success"
    spark_log = (tmp_path / "spark.log").read_text()
    assert "spark-submit --master local[*]" in spark_log
    assert "restored 2 of 2 segments (0 failed)" in spark_log
    for partition in (0, 1):
        assert_restored_as_written(t.store, t.log("orders", partition), target)
    topic_id = t.store.topic("orders").topic_id
    events = t.store.events(topic_id=topic_id, entity="restore")
    assert "orders-0: already restored, 3 segments" in spark_log
    assert [e.partition for e in events] == [0, 1], "one event per restore that wrote"
    assert all("partition_restore" in e.actor for e in events), [e.actor for e in events]
    before = sorted((p.name, p.stat().st_mtime_ns) for p in target.rglob("*") if p.is_file())
    assert run("again", dry_run=False) == "success"
    assert (
        sorted((p.name, p.stat().st_mtime_ns) for p in target.rglob("*") if p.is_file()) == before
    )
    assert len(t.store.events(topic_id=topic_id, entity="restore")) == 2, "a rerun records nothing"
