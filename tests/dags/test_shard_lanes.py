"""Shards that read a broker's disks run on that broker's Airflow queue: one mapped task per
queue (a lane), since Airflow takes a task's queue from the task, never from a mapped value."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.airflow_dags.shard_tasks import (
    broker_queues,
    by_lane,
    for_lanes,
    lane_task_id,
    lanes,
)

DAGS_FOLDER = Path(__file__).resolve().parents[2] / "dags"
QUEUES = "1=kafka-broker-1, 2=kafka-broker-2,3=kafka-broker-1"


def test_queues_are_read_per_broker_and_every_lane_has_a_task_id() -> None:
    queues = broker_queues({"TIERFLOW_BROKER_QUEUES": QUEUES})
    assert queues == {1: "kafka-broker-1", 2: "kafka-broker-2", 3: "kafka-broker-1"}
    assert lanes(queues) == ["default", "kafka-broker-1", "kafka-broker-2"]
    assert lanes({}) == ["default"]
    assert lane_task_id("prepare", "default") == "prepare"
    assert lane_task_id("prepare", "kafka-broker-1") == "prepare_kafka_broker_1"
    shards = [{"queue": "kafka-broker-2"}, {"queue": "default"}]
    assert by_lane(shards, lanes(queues)) == {
        "default": [{"queue": "default"}],
        "kafka-broker-1": [],
        "kafka-broker-2": [{"queue": "kafka-broker-2"}],
    }


def test_one_lane_hands_on_its_shards_themselves_and_more_lanes_each_their_own() -> None:
    shards = [{"queue": "default", "index": 0}, {"queue": "default", "index": 1}]
    assert for_lanes(shards, lanes({})) == shards, "mapped over without a task between"
    queues = broker_queues({"TIERFLOW_BROKER_QUEUES": QUEUES})
    assert for_lanes(shards, lanes(queues)) == by_lane(shards, lanes(queues))


@pytest.mark.parametrize("bad", ["1", "x=kafka", "1=", "1=a b"])
def test_a_bad_entry_is_named(bad: str) -> None:
    with pytest.raises(ValueError, match=rf"TIERFLOW_BROKER_QUEUES entry {bad!r}: expected"):
        broker_queues({"TIERFLOW_BROKER_QUEUES": bad})


def test_the_dags_get_one_shard_task_per_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.dag_processing.dagbag import DagBag

    monkeypatch.setenv("TIERFLOW_BROKER_QUEUES", QUEUES)
    dags = DagBag(dag_folder=str(DAGS_FOLDER)).dags
    for dag_id, base in [
        ("segment_copy", "prepare"),
        ("segment_copy", "finalize"),
        ("diskless_merge", "prepare"),
        ("retention_expiry", "expire"),
    ]:
        found = {t.task_id: t.queue for t in dags[dag_id].tasks if t.task_id.startswith(base)}
        assert found == {
            base: "default",
            f"{base}_kafka_broker_1": "kafka-broker-1",
            f"{base}_kafka_broker_2": "kafka-broker-2",
        }, dag_id
    lane_tasks = {t.task_id for t in dags["segment_copy"].tasks if t.task_id.startswith("shards")}
    assert lane_tasks == {"shards", "shards_kafka_broker_1", "shards_kafka_broker_2"}
    removal = dags["remote_partition_removal"]  # the bucket only: any worker
    assert {t.queue for t in removal.tasks} == {"default"}
