"""Real Apache Kafka brokers for the tests (dev/kafka_broker.py), shared across a module.

``kafka_broker``: one combined broker+controller. ``kafka_cluster``: three of them, topics with
replication factor 3, for what leadership changes. ``tiering_broker``: one that tiers its
topics with ``remote.storage.enable=true`` itself. Each is started once per test module and
stopped, every JVM with it, when the module is done; a module asks for the one it needs.
Without the broker's jars (``make test-servers`` fetches them) the tests that need one fail
with the command to run: ``make test`` always has them.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from dev.kafka_broker import KafkaCluster, new_cluster, tiering
from tierflow.kafka.uuid import to_kafka_uuid

ADMIN_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    yield from _running(tmp_path_factory.mktemp("kafka"), nodes=1)


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    yield from _running(tmp_path_factory.mktemp("kafka3"), nodes=3)


@pytest.fixture(scope="module")
def tiering_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """One broker that tiers itself into ``<base>/remote`` (``dev.kafka_broker.tiering``)."""
    base = tmp_path_factory.mktemp("kafka-tiering")
    yield from _running(base, nodes=1, overrides=tiering(base / "remote"))


def _running(
    base: Path, *, nodes: int, overrides: dict[str, str] | None = None
) -> Iterator[KafkaCluster]:
    cluster = new_cluster(base, nodes=nodes, overrides=overrides)
    try:
        cluster.start()
        wait_for_brokers(cluster, nodes)
        yield cluster
    finally:
        cluster.stop()


def admin(cluster: KafkaCluster) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30_000)


def wait_for_brokers(cluster: KafkaCluster, count: int) -> None:
    """Until ``count`` brokers are registered and unfenced: topics can be created then."""
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    while True:
        try:
            client = admin(cluster)
            try:
                if len(client.describe_cluster()["brokers"]) >= count:
                    return
            finally:
                client.close()
        except Exception:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} Kafka brokers not registered in {ADMIN_TIMEOUT_S} s")
        time.sleep(0.5)


def create_topic(
    cluster: KafkaCluster, name: str, *, partitions: int = 1, replication: int = 1, **configs: str
) -> str:
    """A topic through the admin API (configs with dots as underscores: segment_ms=...);
    its topic id (Kafka's 22-character form), once every partition has a leader."""
    settings = {key.replace("_", "."): value for key, value in configs.items()}
    client = admin(cluster)
    try:
        client.create_topics([NewTopic(name, partitions, replication, topic_configs=settings)])
        return _wait_for_leaders(client, name, partitions)
    finally:
        client.close()


def _wait_for_leaders(client: KafkaAdminClient, name: str, partitions: int) -> str:
    deadline = time.monotonic() + ADMIN_TIMEOUT_S
    while time.monotonic() < deadline:
        described = client.describe_topics([name])[0]
        leaders = [p["leader_id"] for p in described.get("partitions", [])]
        if len(leaders) == partitions and all(leader >= 0 for leader in leaders):
            return to_kafka_uuid(uuid.UUID(str(described["topic_id"])))
        time.sleep(0.2)
    raise TimeoutError(f"topic {name}: not every partition has a leader in {ADMIN_TIMEOUT_S} s")
