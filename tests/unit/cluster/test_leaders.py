"""Leaders inferred from generated multi-broker log dirs: epochs first, then log end offsets."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.cluster.replicas import cluster_settings, offsets, write_broker_root, write_replica
from tierflow.cluster.describe import describe_cluster
from tierflow.cluster.leaders import leader_log, leader_logs
from tierflow.cluster.replicas import DuplicateReplicaError
from tierflow.config import BrokerSpec, Settings
from tierflow.runtime import UnknownPartitionError

TOPIC = "orders"


def brokers(tmp_path: Path, replicas: dict[int, list[tuple[int, int]]]) -> dict[int, Path]:
    """One broker per entry, each holding orders-0 written in the given epochs."""
    dirs = {}
    for broker, epochs in replicas.items():
        log_dir = tmp_path / f"broker{broker}"
        layout = write_replica(log_dir, TOPIC, 0, epochs)
        write_broker_root(log_dir, broker, {(TOPIC, 0): layout.log_end_offset})
        dirs[broker] = log_dir
    return dirs


def test_a_tie_on_the_newest_epoch_goes_to_the_longest_log(tmp_path: Path) -> None:
    # Broker 1 lags in the current epoch; its lower id must not make it the leader.
    dirs = brokers(tmp_path, {1: [(0, 30), (3, 10)], 2: [(0, 30), (3, 25)]})
    settings = cluster_settings(tmp_path, dirs)
    (found,) = leader_logs(settings)
    assert (found.broker, found.source, found.leader_epoch) == (2, "inferred", 3)
    assert found.log.path == dirs[2] / "orders-0"
    one = leader_log(settings, TOPIC, 0)
    assert (one.broker, one.log.path, one.source, one.leader_epoch) == (
        2,
        found.log.path,
        "inferred",
        3,
    )
    (described,) = describe_cluster(settings).partitions
    assert described.replicas == (1, 2)
    assert described.diverged == (), "a follower that lags has not diverged"


def test_the_newest_epoch_wins_over_a_longer_log_and_the_longer_one_diverged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Broker 1 kept writing in epoch 0 after broker 2 was elected (uncleanly) in epoch 1.
    dirs = brokers(tmp_path, {1: [(0, 40)], 2: [(0, 10), (1, 5)]})
    settings = cluster_settings(tmp_path, dirs)
    found = leader_log(settings, TOPIC, 0)
    assert (found.broker, found.leader_epoch) == (2, 1)
    (described,) = describe_cluster(settings).partitions
    (diverged,) = described.diverged
    assert diverged.broker == 1
    assert f"{offsets(10)}..{offsets(40) - 1} in epoch 0" in diverged.reason
    # Every planning pass over the leaders says so too (the copy's and retention's plan tasks).
    with caplog.at_level(logging.WARNING, logger="tierflow.cluster.leaders"):
        (leader,) = leader_logs(settings)
    assert leader.broker == 2
    (warning,) = [r.getMessage() for r in caplog.records if "diverged" in r.getMessage()]
    assert warning.startswith("orders-0: the replica on broker 1 diverged from leader 2 (")
    assert warning.endswith("); only the leader's is read")


def test_a_follower_that_missed_the_newest_epoch_but_stops_before_it_only_lags(
    tmp_path: Path,
) -> None:
    dirs = brokers(tmp_path, {1: [(0, 10), (2, 5)], 2: [(0, 10)], 3: [(0, 4)]})
    (described,) = describe_cluster(cluster_settings(tmp_path, dirs)).partitions
    assert (described.leader, described.leader_epoch, described.source) == (1, 2, "inferred")
    assert described.replicas == (1, 2, 3)
    assert described.diverged == ()


def test_an_epoch_the_leader_never_had_is_divergence(tmp_path: Path) -> None:
    dirs = brokers(tmp_path, {1: [(0, 10), (2, 5)], 2: [(0, 10), (1, 3)]})
    (described,) = describe_cluster(cluster_settings(tmp_path, dirs)).partitions
    assert described.leader == 1
    assert [(d.broker, d.reason) for d in described.diverged] == [
        (2, f"has epoch 1 (from offset {offsets(10)}), the leader not")
    ]


def test_identical_replicas_go_to_the_lowest_broker_id(tmp_path: Path) -> None:
    dirs = brokers(tmp_path, {5: [(0, 12)], 3: [(0, 12)], 4: [(0, 12)]})
    assert leader_log(cluster_settings(tmp_path, dirs), TOPIC, 0).broker == 3


def test_partitions_on_some_brokers_only_each_get_their_leader(tmp_path: Path) -> None:
    dirs = brokers(tmp_path, {1: [(0, 3)], 2: [(0, 5)]})
    write_replica(dirs[2], "audit", 1, [(4, 2)])
    write_replica(dirs[1], "audit", 0, [(1, 2)])
    settings = cluster_settings(tmp_path, dirs)
    found = [(f.log.topic, f.log.partition, f.broker) for f in leader_logs(settings)]
    assert found == [("audit", 0, 1), ("audit", 1, 2), (TOPIC, 0, 2)]
    with pytest.raises(UnknownPartitionError, match="no directory audit-2"):
        leader_log(settings, "audit", 2)


def test_one_partition_in_two_dirs_of_one_broker_is_an_error(tmp_path: Path) -> None:
    first, second = tmp_path / "b1-a", tmp_path / "b1-b"
    write_replica(first, TOPIC, 0, [(0, 2)])
    write_replica(second, TOPIC, 0, [(0, 2)])
    settings = Settings.embedded(
        tmp_path, brokers=(BrokerSpec(1, (first, second)),), log_dirs=(first, second)
    )
    with pytest.raises(DuplicateReplicaError, match="orders-0 is in two log dirs of broker 1"):
        leader_logs(settings)
    with pytest.raises(DuplicateReplicaError, match="two log dirs of broker 1"):
        leader_log(settings, TOPIC, 0)


def test_an_empty_leader_epoch_checkpoint_ranks_below_any_epoch(tmp_path: Path) -> None:
    # As in real samples: a replica that never received data has a 0-byte checkpoint.
    dirs = brokers(tmp_path, {1: [(0, 3)], 2: [(2, 1)]})
    (dirs[1] / "orders-0" / "leader-epoch-checkpoint").write_bytes(b"")
    found = leader_log(cluster_settings(tmp_path, dirs), TOPIC, 0)
    assert (found.broker, found.leader_epoch) == (2, 2)


def test_a_corrupt_leader_epoch_checkpoint_is_reported_not_raised(tmp_path: Path) -> None:
    dirs = brokers(tmp_path, {1: [(0, 3)], 2: [(0, 3)]})
    (dirs[1] / "orders-0" / "leader-epoch-checkpoint").write_text("0\n1\nnot an entry\n")
    settings = cluster_settings(tmp_path, dirs)
    assert leader_log(settings, TOPIC, 0).broker == 2
    (described,) = describe_cluster(settings).partitions
    (problem,) = described.problems
    assert problem.startswith("broker 1: ") and "leader-epoch-checkpoint: line 3" in problem
