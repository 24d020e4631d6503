"""The remote_partition_removal DAG run by Airflow: Kafka's DeleteTopicTest, made durable.

Kafka deletes a topic by renaming each partition directory to ``<dir>.<uuid>-delete``; the
DAG notices that, marks the topic, and removes every remote segment through
DELETE_SEGMENT_STARTED/FINISHED until the remote storage holds nothing of it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.partition_removal.support import tiered_with_data, topic_keys
from tests.support.settings_env import use_settings
from tests.support.tiered import NOW_MS, Tiered
from tierflow.cli import main as cli_main
from tierflow.ids import new_kafka_uuid
from tierflow.metadata.events import EventEntity
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import RemotePartitionDeleteState as P
from tierflow.tasks.attribution import task_instance_of

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def run(t: Tiered, name: str, *, extra: dict | None = None, **conf: object) -> str:
    return run_dag_in_subprocess(
        "remote_partition_removal",
        project=PROJECT,
        airflow_home=t.settings.data_dir / "airflow",
        extra_env={**t.settings.as_env(), **(extra or {})},
        log_file=t.settings.data_dir / f"{name}.log",
        run_conf={"dry_run": False, **conf},  # a manual trigger is dry unless told otherwise
    )


def delete_in_kafka(t: Tiered, topic: str) -> None:
    """What the broker does on topic deletion: rename each partition dir to ...-delete."""
    for log_dir in t.settings.log_dirs:
        for path in sorted(log_dir.glob(f"{topic}-[0-9]*")):
            path.rename(path.with_name(f"{path.name}.{uuid.uuid4().hex}-delete"))


def segment_events(t: Tiered, topic_id: str) -> dict[str, list[str]]:
    history: dict[str, list[str]] = {}
    for event in t.store.events(topic_id=topic_id, entity=EventEntity.SEGMENT):
        history.setdefault(event.segment_id, []).append(event.to_state)
    return history


def assert_removed(t: Tiered, topic_id: str) -> None:
    assert topic_keys(t, "orders", topic_id) == []
    for p in (0, 1):
        job = t.store.partition_delete(topic_id, p)
        assert job is not None and job.delete_state is P.DELETE_PARTITION_FINISHED
        rows = t.store.segments(topic_id, p)
        assert rows and {r.state for r in rows} == {S.DELETE_SEGMENT_FINISHED}


def test_delete_topic_empties_its_remote_storage(tmp_path: Path) -> None:
    """DeleteTopicTest: each segment goes DELETE_SEGMENT_STARTED then _FINISHED; bucket empty."""
    t = tiered_with_data(tmp_path)
    topic_id = t.store.topic("orders").topic_id
    payments = sorted(topic_keys(t, "payments", t.store.topic("payments").topic_id))
    delete_in_kafka(t, "orders")

    assert run(t, "dry", dry_run=True) == "success"
    assert t.store.partition_delete(topic_id, 0) is None
    assert "would mark it for remote removal" in (tmp_path / "dry.log").read_text()

    assert run(t, "removal") == "success"
    assert_removed(t, topic_id)
    for history in segment_events(t, topic_id).values():
        assert history[-2:] == [S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED]
    # Marked by detect, removed by remove: each event names its task instance (the page links).
    moves = [e for e in t.store.events(topic_id=topic_id) if e.to_state.startswith("DELETE_")]
    tasks = {(ti.dag_id, ti.task_id) for ti in map(task_instance_of, [e.actor for e in moves])}
    assert tasks == {("remote_partition_removal", "detect"), ("remote_partition_removal", "remove")}
    assert sorted(topic_keys(t, "payments", t.store.topic("payments").topic_id)) == payments
    assert t.store.topic("payments").state.value == "ENABLED"

    events = len(t.store.events())
    assert run(t, "again") == "success"  # nothing left to do, nothing recorded
    assert len(t.store.events()) == events


def test_killed_during_delete_partition_started_then_rerun(tmp_path: Path) -> None:
    t = tiered_with_data(tmp_path, "chunked-encrypted")
    topic_id = t.store.topic("orders").topic_id
    delete_in_kafka(t, "orders")
    crash = {"TIERFLOW_CRASH_AT": "delete.after_storage_delete#2"}
    with pytest.raises(RuntimeError, match="did not complete"):
        run(t, "killed", extra=crash)
    states = {t.store.partition_delete(topic_id, p).delete_state for p in (0, 1)}
    assert P.DELETE_PARTITION_STARTED in states
    assert topic_keys(t, "orders", topic_id), "the kill left remote data behind"

    os.environ.pop("TIERFLOW_CRASH_AT", None)
    assert run(t, "rerun") == "success"
    assert_removed(t, topic_id)


def test_duplicate_marks_and_a_recreated_topic(tmp_path: Path, monkeypatch) -> None:
    t = tiered_with_data(tmp_path)
    old_id = t.store.topic("orders").topic_id
    use_settings(monkeypatch, t.settings)
    assert cli_main(["delete-topic", "orders"]) == 0  # a dry run first
    assert t.store.partition_delete(old_id, 0) is None
    assert cli_main(["delete-topic", "orders", "--yes"]) == 0
    assert cli_main(["delete-topic", "orders", "--yes"]) == 0  # repeated: counts as one
    marks = [
        e
        for e in t.store.events(topic_id=old_id, entity=EventEntity.PARTITION_DELETE)
        if e.to_state == P.DELETE_PARTITION_MARKED
    ]
    assert sorted(e.partition for e in marks) == [0, 1]

    # Kafka recreates "orders" (a new id) before the remover ran; tierflow registers it.
    new_id = new_kafka_uuid()
    t.store.register_topic(
        "orders", new_id, actor="test", now_ms=NOW_MS, remote_storage_enable=True
    )
    t.store.ensure_partition(new_id, 0, log_start_offset=0, local_log_start_offset=0)
    assert run(t, "removal", detect=False) == "success"
    assert_removed(t, old_id)
    assert t.store.topic("orders").topic_id == new_id
    assert t.store.partition_delete(new_id, 0) is None
