"""Real broker-written log dirs: a 5-broker ZooKeeper cluster, and a KRaft broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.settings_env import use_settings
from tierflow.cli import main as cli_main
from tierflow.cluster.describe import describe_cluster
from tierflow.cluster.leaders import leader_log, leader_logs
from tierflow.config import BrokerSpec, Settings

STUDY = "cesaralcancio__study-kafka/data"
KRAFT = "thanhnhadev__Data_Enginer/data/logs"
REPLICATED = ("ECOMMERCE_NEW_ORDER", "ECOMMERCE_ORDER_APPROVED", "ECOMMERCE_SEND_EMAIL")


@pytest.fixture
def five_brokers(kafka_samples: Path, tmp_path: Path) -> Settings:
    root = kafka_samples / STUDY
    brokers = tuple(BrokerSpec(b, (root / f"kafka{b}",)) for b in range(1, 6))
    dirs = tuple(d for b in brokers for d in b.log_dirs)
    return Settings.embedded(tmp_path, brokers=brokers, log_dirs=dirs)


def test_every_replicated_partition_has_its_three_replicas_and_an_inferred_leader(
    five_brokers: Settings,
) -> None:
    described = describe_cluster(five_brokers)
    replicated = [p for p in described.partitions if p.topic in REPLICATED]
    assert len(replicated) == 9
    for p in replicated:
        assert len(p.replicas) == 3, p
        assert p.leader in p.replicas and p.leader_local
        assert p.source == "inferred" and p.isr is None
        assert p.diverged == () and p.problems == ()
    offsets = [p for p in described.partitions if p.topic == "__consumer_offsets"]
    assert len(offsets) == 50 and all(len(p.replicas) == 1 for p in offsets)


def test_the_leader_is_the_replica_with_the_newest_epoch(five_brokers: Settings) -> None:
    # Brokers 3, 4 and 5 hold it; only broker 3's leader-epoch-checkpoint has epoch 6.
    found = leader_log(five_brokers, "ECOMMERCE_SEND_EMAIL", 1)
    assert (found.broker, found.leader_epoch, found.source) == (3, 6, "inferred")
    # Broker 3's checkpoint of ECOMMERCE_NEW_ORDER-0 is a 0-byte file; broker 2 has epoch 4.
    assert leader_log(five_brokers, "ECOMMERCE_NEW_ORDER", 0).broker == 2


def test_leader_logs_name_one_leader_per_partition(five_brokers: Settings) -> None:
    found = leader_logs(five_brokers)
    assert len(found) == len({(f.log.topic, f.log.partition) for f in found}) == 59


def test_cli_describe_json_of_the_five_brokers(
    five_brokers: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_settings(monkeypatch, five_brokers)
    assert cli_main(["cluster", "describe", "--topic", "ECOMMERCE_SEND_EMAIL", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [b["broker"] for b in out["brokers"]] == [1, 2, 3, 4, 5]
    rows = {p["partition"]: p for p in out["partitions"]}
    assert rows[1]["replicas"] == [3, 4, 5]
    assert (rows[1]["leader"], rows[1]["leader_epoch"], rows[1]["leader_source"]) == (
        3,
        6,
        "inferred",
    )
    assert cli_main(["cluster", "describe", "--topic", "ECOMMERCE_SEND_EMAIL"]) == 0
    table = capsys.readouterr().out
    assert "ECOMMERCE_SEND_EMAIL" in table and "inferred" in table


def test_the_kraft_metadata_log_names_the_leader(kafka_samples: Path, tmp_path: Path) -> None:
    logs = kafka_samples / KRAFT
    settings = Settings.embedded(tmp_path, log_dirs=(logs,))
    found = leader_log(settings, "lab.orders", 0)
    assert (found.broker, found.source, found.leader_epoch) == (1, "kraft", 8)
    described = {(p.topic, p.partition): p for p in describe_cluster(settings).partitions}
    assert described[("demo-topic", 2)].isr == (1,)
    assert described[("demos-topic", 0)].leader_epoch == 0
    # The metadata log is the Raft client's, not a replica: Kafka's LogManager skips it.
    assert ("__cluster_metadata", 0) not in described
