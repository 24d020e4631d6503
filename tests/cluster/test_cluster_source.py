"""Leaders from the cluster's Metadata API (TIERFLOW_KAFKA_BOOTSTRAP), over real TCP.

The cluster is the loopback metadata server of tests/support: kafka-python's client negotiates
and asks it exactly as it would a broker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.replicas import cluster_settings, write_broker_root, write_replica
from tests.support.kafka_metadata_server import Assignment, KafkaMetadataServer
from tests.support.ports import free_port
from tests.support.settings_env import use_settings
from tierflow.cli import main as cli_main
from tierflow.cluster.describe import describe_cluster
from tierflow.cluster.leaders import LeaderNotLocalError, leader_log, leader_logs, leader_scan
from tierflow.kafka.metadata_log import METADATA_PARTITION_DIR
from tierflow.kafka.metadata_log.writer import (
    LeaderAndIsr,
    MetadataLogWriter,
    partition_record,
    register_broker_record,
    topic_record,
)

TOPIC_ID = "8mDFTHsGQHmq9PGX3TXN3A"


@pytest.fixture
def two_brokers(tmp_path: Path) -> dict[int, Path]:
    """orders-0..2 on brokers 1 and 2; broker 1 always has the newer epoch."""
    dirs = {1: tmp_path / "b1", 2: tmp_path / "b2"}
    for partition in range(3):
        write_replica(dirs[1], "orders", partition, [(0, 5), (4, 5)])
        write_replica(dirs[2], "orders", partition, [(0, 5)])
    write_replica(dirs[1], "local-only", 0, [(1, 2)])
    for broker, path in dirs.items():
        write_broker_root(path, broker, {})
    return dirs


def serve(**assignments: Assignment) -> KafkaMetadataServer:
    """The cluster: orders with 3 partitions, assignments by partition ("p0", "p1", ...)."""
    given = {("orders", int(k[1:])): a for k, a in assignments.items()}
    return KafkaMetadataServer({"orders": TOPIC_ID}, partitions=3, assignments=given)


def test_the_cluster_names_the_leader_whatever_the_epochs_say(
    tmp_path: Path, two_brokers: dict[int, Path]
) -> None:
    with serve(
        p0=Assignment(leader=2, leader_epoch=9, replicas=(2, 1), isr=(2,)),
        p1=Assignment(leader=1, leader_epoch=7, replicas=(1, 2)),
        p2=Assignment(leader=3, leader_epoch=5, replicas=(3, 1, 2)),
    ) as cluster:
        settings = cluster_settings(tmp_path, two_brokers, kafka_bootstrap=cluster.bootstrap)
        found = {(f.log.topic, f.log.partition): f for f in leader_logs(settings)}
        described = {p.partition: p for p in describe_cluster(settings, "orders").partitions}
        with pytest.raises(LeaderNotLocalError, match="orders-2: its leader, broker 3"):
            leader_log(settings, "orders", 2)
    p0 = found[("orders", 0)]
    assert (p0.broker, p0.source, p0.leader_epoch) == (2, "cluster", 9)
    assert (found[("orders", 1)].broker, found[("orders", 1)].leader_epoch) == (1, 7)
    assert ("orders", 2) not in found, "led by a broker tierflow does not read"
    # A topic the cluster does not know falls through to the log dirs.
    assert found[("local-only", 0)].source == "inferred"
    assert (described[0].isr, described[0].assigned) == ((2,), (2, 1))
    assert described[2].leader == 3 and not described[2].leader_local
    # Broker 1 has an epoch (4) its leader never had: it diverged.
    assert [d.broker for d in described[0].diverged] == [1]


def test_a_partition_without_a_leader_is_not_read(
    tmp_path: Path, two_brokers: dict[int, Path]
) -> None:
    with serve(p0=Assignment(leader=-1, leader_epoch=3, replicas=(1, 2), isr=(1,))) as cluster:
        settings = cluster_settings(tmp_path, two_brokers, kafka_bootstrap=cluster.bootstrap)
        with pytest.raises(LeaderNotLocalError, match="orders-0: has no leader now"):
            leader_log(settings, "orders", 0)
        (described,) = describe_cluster(settings, "orders").partitions[:1]
    assert (described.leader, described.source) == (None, "cluster")


def test_the_live_clusters_leaderless_partition_is_not_read_whatever_the_log_dirs_say(
    tmp_path: Path, two_brokers: dict[int, Path]
) -> None:
    """The log dirs' KRaft metadata says the cluster stopped (leader -1, every broker fenced):
    alone, it has the last leader read; but the cluster itself, asked, is live, and its
    leaderless partition may be electing a leader right now."""
    writer = MetadataLogWriter(two_brokers[1] / METADATA_PARTITION_DIR)
    writer.append(*(register_broker_record(b, b, fenced=True) for b in (1, 2)))
    stopped = [partition_record(TOPIC_ID, p, [1, 2], LeaderAndIsr(-1, isr=[1])) for p in range(3)]
    writer.append(topic_record("orders", TOPIC_ID), *stopped)
    offline = cluster_settings(tmp_path, two_brokers)
    assert (leader_log(offline, "orders", 0).broker, leader_log(offline, "orders", 0).source) == (
        1,
        "last-leader",
    )
    with serve(p0=Assignment(leader=-1, leader_epoch=3, replicas=(1, 2), isr=(1,))) as cluster:
        settings = cluster_settings(tmp_path, two_brokers, kafka_bootstrap=cluster.bootstrap)
        with pytest.raises(LeaderNotLocalError, match=r"orders-0: has no leader now \(cluster\)"):
            leader_log(settings, "orders", 0)
        scan = leader_scan(settings)
    assert [(u.name, u.leaderless) for u in scan.unread] == [("orders-0", True)]
    assert {f.source for f in scan.found if f.log.topic == "orders"} == {"cluster"}


@pytest.mark.slow  # the client gives up after its 10 s bootstrap timeout
def test_an_unreachable_cluster_is_an_error_not_a_guess(
    tmp_path: Path,
    two_brokers: dict[int, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bootstrap = f"127.0.0.1:{free_port()}"
    use_settings(monkeypatch, cluster_settings(tmp_path, two_brokers, kafka_bootstrap=bootstrap))
    assert cli_main(["cluster", "describe"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tierflow: error: cannot read topic metadata from Kafka at " + bootstrap)
    assert err.count("\n") == 1


def test_cli_describe_shows_the_cluster_source(
    tmp_path: Path,
    two_brokers: dict[int, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serve(p1=Assignment(leader=2, leader_epoch=6, replicas=(2, 1), isr=(2, 1))) as cluster:
        use_settings(
            monkeypatch,
            cluster_settings(tmp_path, two_brokers, kafka_bootstrap=cluster.bootstrap),
        )
        assert cli_main(["cluster", "describe", "--json", "--topic", "orders"]) == 0
    rows = {p["partition"]: p for p in json.loads(capsys.readouterr().out)["partitions"]}
    assert rows[1] | {"diverged": []} == {
        "topic": "orders",
        "partition": 1,
        "leader": 2,
        "leader_epoch": 6,
        "leader_source": "cluster",
        "leader_local": True,
        "replicas": [1, 2],
        "assigned_replicas": [2, 1],
        "isr": [2, 1],
        "diverged": [],
        "problems": [],
    }
