"""What tierflow asks a live cluster, answered by a real 3-broker Kafka cluster.

- `topics sync` takes each topic's configs from the broker's DescribeConfigs, the broker's own
  defaults included (this cluster's log.segment.bytes is 1 MiB, not Kafka's 1 GiB).
- `cluster describe` gives each partition the leader and ISR of the cluster's Metadata.
- A topic removed with a real DeleteTopics is detected; a partition reassigned away from the
  broker whose dirs tierflow reads is not taken for a deletion.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.structs import TopicPartition

from dev.kafka_broker import KafkaCluster
from tests.kafka.produced import send_all, varied
from tests.kafka.support import register, run
from tests.support.kafka_broker import admin, create_topic
from tierflow.config import Settings, parse_brokers
from tierflow.runtime import open_store
from tierflow.tasks.partition_removal import detect_deleted_topics

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
HOUR_MS = 3_600_000


def all_brokers(cluster: KafkaCluster, base: Path, *, bootstrap: bool = True) -> Settings:
    brokers = parse_brokers(cluster.brokers_setting())
    return Settings.embedded(
        base, brokers=brokers, kafka_bootstrap=cluster.bootstrap if bootstrap else None
    )


def one_broker(cluster: KafkaCluster, base: Path, node_id: int) -> Settings:
    node = cluster.node(node_id)
    return Settings.embedded(base, log_dirs=(node.log_dir,), kafka_bootstrap=cluster.bootstrap)


def fill(cluster: KafkaCluster, topic: str, count: int = 50) -> None:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    send_all(producer, topic, varied(count, start_ms=int(time.time() * 1000), seed=3))
    producer.close()


def test_topics_sync_takes_the_brokers_configs_with_its_defaults(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    create_topic(kafka_cluster, "configured", replication=3, retention_ms=str(6 * HOUR_MS))
    settings = all_brokers(kafka_cluster, tmp_path)
    synced = run(settings, "topics", "sync", "--config", "remote.storage.enable=true", "--json")
    assert synced.returncode == 0, synced.stderr
    topic = open_store(settings).topic("configured")
    assert topic.retention_ms == 6 * HOUR_MS  # the topic's override
    assert topic.retention_bytes == -1  # Kafka's default
    assert topic.segment_bytes == 1024 * 1024  # the broker's log.segment.bytes, not 1 GiB
    assert topic.remote_storage_enable
    names = {t.name for t in open_store(settings).topics()}
    assert not any(name.startswith("__") for name in names), names  # internal topics stay out


def test_leaders_and_isr_are_the_clusters(kafka_cluster: KafkaCluster, tmp_path: Path) -> None:
    create_topic(kafka_cluster, "described", partitions=3, replication=3)
    settings = all_brokers(kafka_cluster, tmp_path)
    described = run(settings, "cluster", "describe", "--topic", "described", "--json")
    assert described.returncode == 0, described.stderr
    ours = {p["partition"]: p for p in json.loads(described.stdout)["partitions"]}
    client = admin(kafka_cluster)
    theirs = client.describe_topics(["described"])[0]["partitions"]
    client.close()
    assert len(ours) == 3
    for partition in theirs:
        mine = ours[partition["partition_index"]]
        assert (mine["leader"], mine["leader_source"]) == (partition["leader_id"], "cluster")
        assert sorted(mine["isr"]) == sorted(partition["isr_nodes"])
        assert mine["leader_epoch"] == partition["leader_epoch"]


def test_a_topic_deleted_in_the_cluster_is_detected(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    create_topic(kafka_cluster, "doomed", replication=3)
    fill(kafka_cluster, "doomed")
    settings = all_brokers(kafka_cluster, tmp_path)
    register(settings, "doomed")
    topic_id = open_store(settings).topic("doomed").topic_id
    assert _detected(settings) == []  # alive: nothing to mark
    client = admin(kafka_cluster)
    client.delete_topics(["doomed"])
    client.close()
    _wait_until(lambda: _detected(settings) == [("doomed", topic_id)])


def test_a_partition_reassigned_away_is_not_taken_for_a_deletion(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    create_topic(kafka_cluster, "moved", replication=1)
    fill(kafka_cluster, "moved")
    client = admin(kafka_cluster)
    before = client.describe_topics(["moved"])[0]["partitions"][0]["leader_id"]
    after = next(n.node_id for n in kafka_cluster.nodes if n.node_id != before)
    settings = one_broker(kafka_cluster, tmp_path / "one", before)
    register(settings, "moved")
    client.alter_partition_reassignments({TopicPartition("moved", 0): [after]})
    client.close()
    gone = kafka_cluster.node(before).log_dir / "moved-0"
    _wait_until(lambda: not gone.exists())  # the broker dropped its replica: looks deleted
    assert _detected(settings) == [], "with the cluster's answer the topic is still there"
    everywhere = all_brokers(kafka_cluster, tmp_path / "all", bootstrap=False)
    register(everywhere, "moved")
    assert _detected(everywhere) == [], "the log dirs of every broker still hold it"


def _detected(settings: Settings) -> list[tuple[str, str]]:
    found = detect_deleted_topics(dry_run=True, settings=settings)["detection"]["deleted"]
    return [(d["name"], d["topic_id"]) for d in found]


def _wait_until(condition, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the cluster did not get there in time")
        time.sleep(0.5)
