"""The removal DAG's task bodies and the operator commands, called without Airflow."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.partition_removal.support import tiered_with_data, topic_keys
from tests.support.ports import free_port
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered
from tierflow.cli import main as cli_main
from tierflow.kafka.cluster_metadata import ClusterMetadataError
from tierflow.lifecycle.removal.detect import LogDirsUnavailableError
from tierflow.metadata.states import RemotePartitionDeleteState as P
from tierflow.metadata.states import TieredState
from tierflow.tasks.partition_removal import (
    detect_deleted_topics,
    list_pending_removals,
    remove_one,
    summarize,
)


def delete_in_kafka(t: Tiered, topic: str) -> None:
    for log_dir in t.settings.log_dirs:
        for path in sorted(log_dir.glob(f"{topic}-[0-9]*")):
            path.rename(path.with_name(f"{path.name}.{uuid.uuid4().hex}-delete"))


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch):
    def apply(t: Tiered) -> None:
        use_settings(monkeypatch, t.settings)

    return apply


def test_detect_marks_and_retires_then_removal_finishes(tmp_path: Path) -> None:
    t = tiered_with_data(tmp_path)
    topic_id = t.store.topic("orders").topic_id
    delete_in_kafka(t, "orders")

    dry = detect_deleted_topics(dry_run=True, settings=t.settings)
    assert [m["topic_id"] for m in dry["marked"]] == [topic_id]
    assert t.store.partition_delete(topic_id, 0) is None

    detected = detect_deleted_topics(dry_run=False, settings=t.settings)
    assert detected["marked"][0]["newly_marked"] == [0, 1]
    assert "orders" not in {topic.name for topic in t.store.topics()}  # the name is free
    pending = list_pending_removals(t.settings)
    assert [(j["topic"], j["partition"]) for j in pending] == [("orders", 0), ("orders", 1)]

    assert remove_one(pending[0], dry_run=True, settings=t.settings)["dry_run"]
    assert t.store.partition_delete(topic_id, 0).delete_state is P.DELETE_PARTITION_MARKED
    results = [remove_one(job, dry_run=False, settings=t.settings) for job in pending]
    assert all(r["finished"] for r in results)
    assert topic_keys(t, "orders", topic_id) == []
    assert summarize(detected, results)["finished"] == 2
    assert detect_deleted_topics(dry_run=False, settings=t.settings)["marked"] == []


def test_an_unreachable_cluster_fails_detection_and_marks_nothing(tmp_path: Path) -> None:
    t = tiered_with_data(tmp_path)
    port = free_port()  # nothing listens there
    settings = t.settings.updated(kafka_bootstrap=f"127.0.0.1:{port}")
    with pytest.raises(ClusterMetadataError, match=f"127.0.0.1:{port}"):
        detect_deleted_topics(dry_run=False, settings=settings)
    assert t.store.partition_deletes() == []
    with pytest.raises(RuntimeError, match="detection failed"):
        summarize(None, [])


def test_missing_log_dir_is_not_taken_for_deleted_topics(tmp_path: Path) -> None:
    t = tiered_with_data(tmp_path)
    settings = t.settings.updated(log_dirs=(tmp_path / "not-mounted",))
    with pytest.raises(LogDirsUnavailableError, match="not-mounted"):
        detect_deleted_topics(dry_run=False, settings=settings)
    assert t.store.partition_deletes() == []


def test_cli_remove_partitions_lists_then_removes(tmp_path: Path, cli_env, capsys) -> None:
    t = tiered_with_data(tmp_path)
    cli_env(t)
    topic_id = t.store.topic("orders").topic_id
    assert cli_main(["delete-topic", "orders", "--yes"]) == 0
    assert cli_main(["remove-partitions"]) == 0
    out = capsys.readouterr().out
    assert "DELETE_PARTITION_MARKED" in out and "dry run: nothing changed" in out
    assert topic_keys(t, "orders", topic_id)
    assert cli_main(["remove-partitions", "--yes"]) == 0
    assert "removed 2 partitions" in capsys.readouterr().out
    assert topic_keys(t, "orders", topic_id) == []
    assert cli_main(["delete-topic", "orders", "--yes"]) == 0  # repeated: already marked
    assert "already marked" in capsys.readouterr().out


def test_cli_tiering_disable_and_enable(tmp_path: Path, cli_env, capsys) -> None:
    t = tiered_with_data(tmp_path)
    cli_env(t)
    topic_id = t.store.topic("orders").topic_id
    assert cli_main(["tiering", "disable", "orders", "--policy", "delete"]) == 2
    assert "add --yes" in capsys.readouterr().err
    assert t.store.topic("orders").state is TieredState.ENABLED
    assert cli_main(["tiering", "disable", "orders"]) == 0  # retain
    assert "DISABLED (policy retain" in capsys.readouterr().out
    assert topic_keys(t, "orders", topic_id)
    assert cli_main(["tiering", "disable", "orders", "--policy", "delete", "--yes"]) == 0
    assert topic_keys(t, "orders", topic_id) == []
    assert cli_main(["tiering", "enable", "orders"]) == 0
    assert t.store.topic("orders").state is TieredState.ENABLED
    assert cli_main(["tiering", "disable", "nope"]) == 3  # not found, as the README says
    assert "nope" in capsys.readouterr().err
