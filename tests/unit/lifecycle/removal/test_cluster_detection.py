"""Deleted topics seen from cluster metadata, read over the network from a loopback server.

``KafkaMetadataServer`` plays the cluster for the answers a real broker cannot be made to give
(see its docstring; tests/kafka detects a real ``delete_topics``); the client side is
kafka-python's real ``KafkaAdminClient`` over a real socket.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kafka_metadata_server import KafkaMetadataServer
from tests.support.tiered import NOW_MS, Tiered
from tests.unit.lifecycle.removal.support import held_broker, recreate, rename_for_removal, topic_id
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.cluster_metadata import ClusterMetadataError, read_cluster_topics
from tierflow.lifecycle.removal.detect import (
    LogDirsUnavailableError,
    candidate_topic_names,
    find_deleted_topics,
)

TIMEOUT_S = 2.0


@pytest.fixture
def broker(tmp_path: Path) -> Tiered:
    return held_broker(tmp_path)


@pytest.fixture
def server(broker: Tiered) -> Iterator[KafkaMetadataServer]:
    """Serves the broker's topics under their registered ids, plus one tierflow ignores."""
    topics = {t.name: t.topic_id for t in broker.store.topics()}
    with KafkaMetadataServer({**topics, "__consumer_offsets": new_kafka_uuid()}) as running:
        yield running


def detect(t: Tiered, server: KafkaMetadataServer):
    cluster = read_cluster_topics(
        server.bootstrap, timeout_s=TIMEOUT_S, topics=candidate_topic_names(t.store)
    )
    return find_deleted_topics(t.store, log_dirs=t.settings.log_dirs, cluster=cluster)


def io_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("kafka-io")]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_reads_every_topic_with_its_id(server: KafkaMetadataServer):
    assert read_cluster_topics(server.bootstrap, timeout_s=TIMEOUT_S) == server.topics
    assert ("MetadataRequest", 12) in server.requests  # negotiated as with Kafka 3.9
    assert io_threads() == []


def test_named_topics_leave_unknown_ones_out(server: KafkaMetadataServer):
    found = read_cluster_topics(server.bootstrap, timeout_s=TIMEOUT_S, topics=["orders", "gone"])
    assert found == {"orders": server.topics["orders"]}


def test_a_broker_without_topic_ids_gives_none():
    with KafkaMetadataServer({"orders": new_kafka_uuid()}, broker_version=(2, 7)) as old:
        assert read_cluster_topics(old.bootstrap, timeout_s=TIMEOUT_S) == {"orders": None}
        assert ("MetadataRequest", 9) in old.requests


def test_a_topic_the_client_may_not_describe_raises(server: KafkaMetadataServer):
    """Asked by name, an ACL denial is an error, never a deletion."""
    server.denied.add("orders")
    with pytest.raises(ClusterMetadataError, match="not authorized to describe topic 'orders'"):
        read_cluster_topics(server.bootstrap, timeout_s=TIMEOUT_S, topics=["orders"])
    # A full listing cannot tell: the broker just leaves the topic out.
    assert "orders" not in read_cluster_topics(server.bootstrap, timeout_s=TIMEOUT_S)


def test_an_unreachable_bootstrap_raises_quickly_naming_it():
    address = f"127.0.0.1:{closed_port()}"
    started = time.monotonic()
    with pytest.raises(ClusterMetadataError, match=address):
        read_cluster_topics(address, timeout_s=0.5)
    assert time.monotonic() - started < 5
    assert io_threads() == []  # the admin client's IO thread was stopped


def test_a_server_that_drops_connections_raises(server: KafkaMetadataServer):
    server.broken = True
    with pytest.raises(ClusterMetadataError, match=server.bootstrap):
        read_cluster_topics(server.bootstrap, timeout_s=0.5)
    assert io_threads() == []


def test_present_topics_are_kept(broker: Tiered, server: KafkaMetadataServer):
    report = detect(broker, server)
    assert report.source == "cluster"
    assert report.deleted == []
    assert {k.name for k in report.kept} == {"orders", "payments"}


def test_a_topic_absent_from_the_cluster_is_deleted(broker: Tiered, server: KafkaMetadataServer):
    del server.topics["payments"]
    rename_for_removal(broker, "payments", 0)
    [deleted] = detect(broker, server).deleted
    assert (deleted.name, deleted.topic_id, deleted.source) == (
        "payments",
        topic_id(broker, "payments"),
        "cluster",
    )
    assert "absent from the cluster metadata" in deleted.reason


def test_a_topic_absent_but_still_live_locally_waits(broker: Tiered, server: KafkaMetadataServer):
    """A partial answer must not delete a topic the broker still serves; the next run will."""
    del server.topics["payments"]
    report = detect(broker, server)
    assert report.deleted == []
    assert any("still live in the log dirs" in k.reason for k in report.kept)


def test_a_topic_recreated_in_the_cluster_is_deleted_under_its_old_id(
    broker: Tiered, server: KafkaMetadataServer
):
    old_id = topic_id(broker, "orders")
    server.topics["orders"] = new_id = new_kafka_uuid()
    [deleted] = detect(broker, server).deleted  # even while the old dirs are still live
    assert (deleted.name, deleted.topic_id, deleted.source) == ("orders", old_id, "cluster")
    assert new_id in deleted.reason


def test_the_cluster_overrules_the_log_dirs(broker: Tiered, server: KafkaMetadataServer):
    """Replicas moved off this broker look deleted locally; the cluster knows better."""
    for p in (0, 1):
        rename_for_removal(broker, "orders", p)
    report = detect(broker, server)
    assert report.deleted == []
    reason = next(k.reason for k in report.kept if k.name == "orders")
    assert "same id" in reason and "renamed by Kafka for removal" in reason


def test_without_topic_ids_the_cluster_compares_names(broker: Tiered):
    """A broker before 2.8 sends no ids, so a recreated topic cannot be told apart."""
    recreate_topics = {t.name: None for t in broker.store.topics()}
    with KafkaMetadataServer(recreate_topics, broker_version=(2, 7)) as old:
        for p in (0, 1):
            rename_for_removal(broker, "orders", p)
        recreate(broker, "orders", 2)
        report = detect(broker, old)
    assert report.deleted == []
    assert "no topic ids" in next(k.reason for k in report.kept if k.name == "orders")


def test_a_topic_never_held_is_judged_by_the_cluster(broker: Tiered, server: KafkaMetadataServer):
    broker.store.register_topic("audit", new_kafka_uuid(), actor="test", now_ms=NOW_MS)
    assert [d.name for d in detect(broker, server).deleted] == ["audit"]


def test_the_log_dirs_must_be_available_even_with_a_cluster(
    broker: Tiered, server: KafkaMetadataServer, tmp_path: Path
):
    cluster = read_cluster_topics(server.bootstrap, timeout_s=TIMEOUT_S)
    with pytest.raises(LogDirsUnavailableError):
        find_deleted_topics(broker.store, log_dirs=[tmp_path / "unmounted"], cluster=cluster)


def test_a_bad_client_setting_is_a_cluster_metadata_error(server: KafkaMetadataServer):
    with pytest.raises(ClusterMetadataError, match="KafkaConfigurationError"):
        read_cluster_topics(server.bootstrap, client_config={"no_such_setting": 1})
    assert io_threads() == []
