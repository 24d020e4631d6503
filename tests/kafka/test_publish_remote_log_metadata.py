"""tierflow publishes its transitions to a real broker's ``__remote_log_metadata``, exactly once.

tierflow copies a topic the broker does not tier itself, then ``tierflow remote-log-metadata
publish`` sends each transition. The run is SIGKILLed where it hurts most: after the broker
took a round of records but before the store marked them, and between rounds. The reruns
finish the job: the topic then holds exactly one record per transition of the store's
history, in history order per partition, each in the metadata partition Kafka's partitioner
picks, and nothing of any other topic. A run with nothing new publishes nothing.
"""

from __future__ import annotations

import json
import os
import signal
from collections import Counter
from pathlib import Path

import pytest
from kafka import KafkaProducer

from dev.airflow_local import run_dag_in_subprocess
from dev.kafka_broker import KafkaCluster
from tests.kafka.support import PROJECT_ROOT, register, run, settings_for, tierflow
from tests.support.kafka_broker import create_topic
from tierflow.config import Settings
from tierflow.kafka.remote_log_metadata.partitioner import metadata_partition
from tierflow.kafka.remote_log_metadata.records import SegmentMetadata, SegmentUpdate
from tierflow.kafka.remote_log_metadata.serde import deserialize
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_store

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
MIB = 1024 * 1024
PARTITIONS = 5  # dev.kafka_broker.tiering's default


def _produce(cluster: KafkaCluster, topic: str, mib: int) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=5)
    for n in range(mib * 1024):
        producer.send(topic, os.urandom(1024), f"k{n}".encode(), partition=0)
    producer.flush()
    producer.close()


def _copied(cluster: KafkaCluster, base: Path, topic: str) -> tuple[Settings, str]:
    topic_id = create_topic(cluster, topic, segment_bytes=str(MIB))
    _produce(cluster, topic, 4)
    settings = settings_for(cluster, base)
    register(settings, topic)
    done = run(settings, "copy", "--no-spark")
    assert done.returncode == 0, done.stderr
    return settings, topic_id


def _publish(settings: Settings, *argv: str, crash_at: str | None = None) -> tuple[int, dict]:
    env = {"TIERFLOW_CRASH_AT": crash_at} if crash_at else None
    process = tierflow(settings, "remote-log-metadata", "publish", "--json", *argv, env=env)
    out, err = process.communicate(timeout=300)
    return process.returncode, json.loads(out) if process.returncode == 0 else {"stderr": err}


def _on_topic(cluster: KafkaCluster) -> list[tuple[int, int, bytes]]:
    topic = MetadataTopic(cluster.bootstrap)
    return [(r.partition, r.offset, r.value) for p in range(PARTITIONS) for r in topic.read(p, 0)]


def _expected(settings: Settings, topic_id: str) -> list[tuple[str, int]]:
    """(segment id, state id) of each segment transition in the store, in history order."""
    store = open_store(settings)
    events = store.events(topic_id=topic_id, entity="segment")
    return [(str(e.segment_id), S(e.to_state).id) for e in events]


def _published(cluster: KafkaCluster, topic_id: str) -> list[tuple[str, int]]:
    found = []
    for partition, _offset, value in _on_topic(cluster):
        record = deserialize(value)
        if record.partition.topic_id != topic_id:
            continue
        assert partition == metadata_partition(topic_id, 0, PARTITIONS)
        assert isinstance(record, SegmentMetadata | SegmentUpdate)
        found.append((record.segment_id, record.state))
    return found


@pytest.mark.parametrize(
    ("crash_at", "chunk"),
    [("rlmm.after_send", "1000"), ("rlmm.after_send#2", "2"), ("rlmm.after_enqueue", "1000")],
    ids=["after-the-broker-took-all", "between-rounds", "before-any-send"],
)
def test_a_killed_publish_is_finished_by_the_next_run_neither_lost_nor_duplicated(
    tiering_broker: KafkaCluster, tmp_path: Path, crash_at: str, chunk: str
) -> None:
    topic = f"published-{chunk}-{crash_at.replace('#', '-').replace('.', '-')}"
    settings, topic_id = _copied(tiering_broker, tmp_path / "tierflow", topic)
    expected = _expected(settings, topic_id)
    assert [state for _, state in expected].count(S.COPY_SEGMENT_FINISHED.id) >= 3

    code, _ = _publish(settings, "--chunk", chunk, crash_at=crash_at)
    assert code == -signal.SIGKILL
    code, report = _publish(settings, "--chunk", chunk)
    assert code == 0, report
    published = _published(tiering_broker, topic_id)
    assert published == expected
    assert report["waiting"] == 0 and report["published"] + report["recovered"] <= len(expected)

    code, again = _publish(settings)
    assert code == 0 and again["published"] == again["recovered"] == again["enqueued"] == 0
    assert _published(tiering_broker, topic_id) == expected


def test_only_tierflow_copied_topics_are_published_and_each_record_once(
    tiering_broker: KafkaCluster, tmp_path: Path
) -> None:
    """Every record on the topic is unique; topics tierflow does not copy (the broker's own
    tiering ones, which share the metadata topic) are left to the broker."""
    settings, topic_id = _copied(tiering_broker, tmp_path / "tierflow", "published-once")
    broker_tiered = create_topic(
        tiering_broker, "tiered-by-the-broker", remote_storage_enable="true", segment_bytes=str(MIB)
    )
    _produce(tiering_broker, "tiered-by-the-broker", 3)
    code, report = _publish(settings)
    assert code == 0, report
    values = Counter(value for _, _, value in _on_topic(tiering_broker))
    assert max(values.values()) == 1
    assert _published(tiering_broker, topic_id) == _expected(settings, topic_id)
    store = open_store(settings)
    assert store.outbox_depth() == 0
    assert broker_tiered not in {e.topic_id for e in store.events()}


def test_a_copy_publishes_when_the_switch_is_on_and_the_dag_publishes_what_waits(
    tiering_broker: KafkaCluster, tmp_path: Path
) -> None:
    """With TIERFLOW_PUBLISH_REMOTE_LOG_METADATA on, ``tierflow copy`` publishes what it did;
    what a copy with the switch off left waits in the store until the DAG publishes it."""
    topic = "published-by-the-dag"
    settings, topic_id = _copied(tiering_broker, tmp_path / "tierflow", topic)
    assert _published(tiering_broker, topic_id) == []
    on = settings.updated(publish_remote_log_metadata=True)
    state = run_dag_in_subprocess(
        "remote_log_metadata",
        project=PROJECT_ROOT,
        airflow_home=tmp_path / "airflow",
        extra_env=on.as_env(),
        log_file=tmp_path / "remote_log_metadata.log",
    )
    assert state == "success"
    assert _published(tiering_broker, topic_id) == _expected(settings, topic_id)

    _produce(tiering_broker, topic, 2)  # more segments roll
    done = run(on, "copy", "--no-spark", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["published"] > 0
    assert _published(tiering_broker, topic_id) == _expected(settings, topic_id)
