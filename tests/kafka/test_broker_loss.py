"""A 3-broker cluster loses a broker, and tierflow carries on.

- The leader's JVM dies in the middle of a copy: the copy goes on from the new leader's
  replica, with no gap and no offset copied twice. The copy is held at a crash point with two
  segments recorded COPY_SEGMENT_STARTED from the leader's log dir; the leader's JVM is
  SIGKILLed, a new leader is elected and takes more writes; then the copy is let go, and run
  again. The remote tier must hold every offset from 0 exactly once, each record the one
  produced (acks=all, so none is lost with the old leader).
- A broker dies with its disk: the only replica of a topic is gone. A new broker takes its node
  id with an empty, formatted log dir; the topic is restored into it from the bucket before its
  first start (checked against the live cluster, since its own metadata log is empty); once
  it is elected leader (an unclean election: Kafka cannot know the log was restored), consumers
  read every tiered record from it again.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from kafka import KafkaProducer
from kafka.admin import NewTopic

from dev.kafka_broker import KafkaCluster
from tests.concurrency.gate import Gate
from tests.kafka.produced import Record, send_all, tiered_records, varied
from tests.kafka.support import assert_contiguous_from, consume, finished_spans, register, run
from tests.kafka.support import tierflow as start_tierflow
from tests.support.kafka_broker import admin, create_topic
from tierflow.config import Settings, parse_brokers
from tierflow.runtime import open_storage, open_store

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
TOPIC = "failover"
UNCLEAN = 1  # ElectLeaders' election type


def leader_of(cluster: KafkaCluster, topic: str) -> int:
    client = admin(cluster)
    try:
        return client.describe_topics([topic])[0]["partitions"][0]["leader_id"]
    finally:
        client.close()


def wait_for_new_leader(cluster: KafkaCluster, topic: str, old: int, timeout_s: float = 60) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            leader = leader_of(cluster, topic)
        except Exception:  # the dead node may still be asked first
            leader = -1
        if leader not in (-1, old):
            return leader
        time.sleep(0.5)
    raise TimeoutError(f"{topic}: no new leader in {timeout_s:.0f} s")


def produce(cluster: KafkaCluster, count: int, seed: int) -> list[Record]:
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all", retries=10)
    try:
        return send_all(producer, TOPIC, varied(count, start_ms=int(time.time() * 1000), seed=seed))
    finally:
        producer.close()


def test_the_copy_goes_on_from_the_new_leader_after_the_leader_dies(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    create_topic(kafka_cluster, TOPIC, replication=3, segment_bytes=str(1024 * 1024))
    sent = {r.offset: r for r in produce(kafka_cluster, 3000, seed=1)}
    brokers = parse_brokers(kafka_cluster.brokers_setting())
    settings = Settings.embedded(
        tmp_path / "tierflow", brokers=brokers, kafka_bootstrap=kafka_cluster.bootstrap
    )
    register(settings, TOPIC)
    time.sleep(1.5)  # every replica's high watermark checkpoint catches up
    old = leader_of(kafka_cluster, TOPIC)
    gate = Gate(tmp_path, "copy")
    copying = start_tierflow(settings, "copy", env=gate.env())
    gate.bind(copying)
    gate.run_until("copy.after_started#2")
    kafka_cluster.kill_node(old)
    new = wait_for_new_leader(kafka_cluster, TOPIC, old)
    sent.update((r.offset, r) for r in produce(kafka_cluster, 2000, seed=5000))
    gate.finish()
    copying.communicate(timeout=120)
    time.sleep(1.5)
    for _ in range(2):  # the next runs read the new leader's replica
        again = run(settings, "copy")
        assert again.returncode == 0, again.stderr
    spans = finished_spans(settings, TOPIC)
    assert_contiguous_from(spans, 0)
    assert spans[-1][1] > max(o for o in sent if o < 3000), "copied past the failover"
    read = tiered_records(open_store(settings), open_storage(settings), TOPIC, 0, spans[-1][1])
    assert read == [sent[o] for o in sorted(sent) if o <= spans[-1][1]]
    assert new != old
    kafka_cluster.start_node(old)  # the module's other tests get all three back


def test_a_broker_that_replaces_a_dead_one_is_restored_from_the_bucket(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    lost = kafka_cluster.nodes[-1].node_id
    client = admin(kafka_cluster)
    client.create_topics([NewTopic("lonely", replica_assignments={0: [lost]})])
    client.close()
    _wait_for_leader(kafka_cluster, "lonely")
    producer = KafkaProducer(bootstrap_servers=kafka_cluster.bootstrap, acks="all")
    now = int(time.time() * 1000)
    sent = {r.offset: r for r in send_all(producer, "lonely", varied(2500, start_ms=now, seed=9))}
    producer.close()
    brokers = parse_brokers(kafka_cluster.brokers_setting())
    settings = Settings.embedded(
        tmp_path / "tierflow", brokers=brokers, kafka_bootstrap=kafka_cluster.bootstrap
    )
    register(settings, "lonely")
    time.sleep(1.5)
    assert run(settings, "copy").returncode == 0
    end = finished_spans(settings, "lonely")[-1][1]
    kafka_cluster.replace_node(lost)
    to = str(kafka_cluster.node(lost).log_dir)
    restored = run(settings, "restore", "lonely", "--to", to)
    assert restored.returncode == 0, restored.stderr
    kafka_cluster.start_node(lost)
    # Kafka (KIP-966) does not let a broker that came back without its disk lead a partition
    # whose other replicas are gone: the operator elects it uncleanly, knowing the log was
    # restored. What the dead broker held past the last tiered offset is lost with it.
    _elect_unclean(kafka_cluster, "lonely")
    read = consume(kafka_cluster, "lonely")
    assert read == [sent[o] for o in sorted(sent) if o <= end]


def _elect_unclean(cluster: KafkaCluster, topic: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        client = admin(cluster)
        try:
            client.elect_leaders(UNCLEAN, {topic: [0]}, raise_errors=False)
        finally:
            client.close()
        if leader_of(cluster, topic) >= 0:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}-0: no leader elected in {timeout_s:.0f} s")
        time.sleep(1)


def _wait_for_leader(cluster: KafkaCluster, topic: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while leader_of(cluster, topic) < 0:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: no leader in {timeout_s:.0f} s")
        time.sleep(0.2)
