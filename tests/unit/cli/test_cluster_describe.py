"""``tierflow cluster describe``: a table per topic, a summary of many, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.replicas import cluster_settings, write_broker_root, write_replica
from tests.support.settings_env import use_settings
from tierflow.cli import cluster_work
from tierflow.cli import main as cli_main
from tierflow.kafka.partition_metadata import write_partition_metadata

TOPIC_ID = "8mDFTHsGQHmq9PGX3TXN3A"


@pytest.fixture
def three_topics(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = {1: tmp_path / "b1", 2: tmp_path / "b2"}
    for topic in ("alpha", "beta", "gamma"):
        for partition in range(2):
            write_replica(dirs[1], topic, partition, [(0, 2), (1, 1)])
            write_replica(dirs[2], topic, partition, [(0, 2)])
    for broker, path in dirs.items():
        write_broker_root(path, broker, {})
    use_settings(monkeypatch, cluster_settings(tmp_path, dirs))


def test_one_table_per_topic_with_each_partition(
    three_topics: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["cluster", "describe"]) == 0
    out = capsys.readouterr().out
    for title in ("brokers", "alpha", "beta", "gamma"):
        assert f" {title} " in out or f"{title}\n" in out
    assert out.count("inferred") == 6


def test_many_partitions_make_one_row_per_topic(
    three_topics: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_work, "MAX_PARTITION_ROWS", 4)
    assert cli_main(["cluster", "describe"]) == 0
    out = capsys.readouterr().out
    assert "--topic NAME shows each partition" in out
    assert out.count("inferred:2") == 3 and out.count("1:2") == 3
    assert cli_main(["cluster", "describe", "--topic", "beta"]) == 0
    assert capsys.readouterr().out.count("inferred") == 2


def test_a_bad_brokers_setting_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TIERFLOW_BROKERS", "1=/data/a,one=/data/b")
    assert cli_main(["cluster", "describe"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "tierflow: error: TIERFLOW_BROKERS entry 'one=/data/b': broker id 'one' is not a "
        "whole number\n"
    )


def test_an_unknown_topic_is_one_line(
    three_topics: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["cluster", "describe", "--topic", "delta", "--json"]) == 3
    err = capsys.readouterr().err
    assert err == "tierflow: error: no partition of topic 'delta' in the log dirs\n"


def test_copy_reads_each_partition_from_its_leader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With replicated partitions in TIERFLOW_BROKERS, register and copy still work, and the
    dry run lists the leader's segments, not the lagging follower's."""
    dirs = {1: tmp_path / "b1", 2: tmp_path / "b2"}
    leader = write_replica(dirs[2], "orders", 0, [(0, 30), (1, 30)])
    write_replica(dirs[1], "orders", 0, [(0, 30)])
    for broker, path in dirs.items():
        write_partition_metadata(path / "orders-0" / "partition.metadata", TOPIC_ID)
        write_broker_root(path, broker, {("orders", 0): leader.log_end_offset})
    use_settings(monkeypatch, cluster_settings(tmp_path, dirs))
    assert cli_main(["topics", "register", "orders", "--config", "remote.storage.enable=true"]) == 0
    capsys.readouterr()
    assert cli_main(["copy", "--dry-run", "--json"]) == 0
    (partition,) = json.loads(capsys.readouterr().out)["partitions"]
    rolled = [s.base_offset for s in leader.segments[:-1]]
    assert (partition["topic"], partition["partition"], partition["pending"]) == (
        "orders",
        0,
        rolled,
    )
