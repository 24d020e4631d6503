"""A stopped KRaft cluster's partitions, which its metadata leaves without a leader, are read from
their last leader; a live cluster's leaderless partitions never are.

The stopped cluster is tests.support.stopped_kraft's: three brokers shut down one after another
as Kafka's controller records it, with KIP-966 (ELR and LastKnownElr) and without (the ISR keeps
the last member). Which replica stands in among several is tested on hand-written metadata.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.cluster.replicas import cluster_settings, write_broker_root, write_replica
from tests.support.stopped_kraft import StoppedCluster, stopped_cluster
from tierflow.cluster.describe import describe_cluster
from tierflow.cluster.leaders import LeaderNotLocalError, leader_log, leader_scan
from tierflow.cluster.unread import ELECTING, NO_REPLICA
from tierflow.config import BrokerSpec, Settings
from tierflow.kafka.metadata_log import METADATA_PARTITION_DIR
from tierflow.kafka.metadata_log import records as r
from tierflow.kafka.metadata_log.writer import (
    LeaderAndIsr,
    MetadataLogWriter,
    partition_record,
    register_broker_record,
    topic_record,
)

LEADERS = "tierflow.cluster.leaders"
ORDERS = "AAAAAAAAAAAAAAAAAAAAAg"


@pytest.fixture(params=[True, False], ids=["elr", "no-elr"])
def stopped(request: pytest.FixtureRequest, tmp_path: Path) -> StoppedCluster:
    return stopped_cluster(tmp_path, elr=request.param)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == LEADERS and r.levelname == "WARNING"
    ]


def test_each_partition_is_read_from_its_last_leader_and_said_once(
    stopped: StoppedCluster, caplog: pytest.LogCaptureFixture
) -> None:
    settings = stopped.logs.settings
    with caplog.at_level(logging.INFO, logger=LEADERS):
        scan = leader_scan(settings)
    read = {(f.log.topic, f.log.partition): (f.broker, f.source) for f in scan.found}
    assert read == {key: (broker, "last-leader") for key, broker in stopped.last_leaders.items()}
    assert len(read) == 12 and scan.unread == []
    assert set(stopped.last_leaders.values()) == {1, 2, 3}, "the last leaders are spread"
    for (topic, partition), broker in stopped.last_leaders.items():
        assert read[(topic, partition)][0] == broker
        found = next(f for f in scan.found if f.log.key == (topic, partition))
        assert found.log.path == stopped.logs.log_dirs[broker] / f"{topic}-{partition}"
    (warning,) = _warnings(caplog)
    assert warning.startswith("12 partitions have no leader in the KRaft metadata, every ")
    for (topic, partition), broker in stopped.last_leaders.items():
        assert warning.count(f"{topic}-{partition} (broker {broker})") == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LEADERS):
        one = leader_log(settings, "orders", 1)
    assert (one.broker, one.source) == (stopped.last_leaders[("orders", 1)], "last-leader")
    assert _warnings(caplog) == [], "one partition's lookup leaves the warning to the plan"
    described = {(p.topic, p.partition): p for p in describe_cluster(settings).partitions}
    assert {p.source for p in described.values()} == {"last-leader"}
    assert all(p.leader_local and p.diverged == () for p in described.values())


def test_a_live_clusters_leaderless_partition_is_not_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Only broker 1 stopped: orders-0's ISR was broker 1 alone; broker 2, its follower, is up.
    live = stopped_cluster(tmp_path, elr=False, stop=(1,))
    assert set(live.last_leaders) == {("orders", 0), ("clicks", 0)}
    with caplog.at_level(logging.INFO, logger=LEADERS):
        scan = leader_scan(live.logs.settings)
    assert [(u.name, u.kind, u.leaderless) for u in scan.unread] == [
        ("clicks-0", ELECTING, True),
        ("orders-0", ELECTING, True),
    ]
    assert {f.source for f in scan.found} == {"kraft"} and len(scan.found) == 10
    assert _warnings(caplog) == []
    with pytest.raises(LeaderNotLocalError, match=r"^orders-0: has no leader now \(kraft\), in a"):
        leader_log(live.logs.settings, "orders", 0)


def test_a_last_leader_on_no_configured_broker_is_not_replaced(tmp_path: Path) -> None:
    stopped = stopped_cluster(tmp_path, elr=True)
    dirs = {b: stopped.logs.log_dirs[b] for b in (1, 2)}  # broker 3's disks are not given
    scan = leader_scan(cluster_settings(tmp_path, dirs))
    on_3 = sorted(f"{t}-{p}" for (t, p), b in stopped.last_leaders.items() if b == 3)
    assert on_3 and [u.name for u in scan.unread] == on_3
    assert {(u.kind, u.detail) for u in scan.unread} == {
        (NO_REPLICA, "only brokers 3 may lead next")
    }
    assert len(scan.found) == 12 - len(on_3)
    with pytest.raises(LeaderNotLocalError, match=r"the brokers that may lead next \(3\)"):
        leader_log(cluster_settings(tmp_path, dirs), scan.unread[0].topic, scan.unread[0].partition)


def _stopped_partition(
    tmp_path: Path, epochs: dict[int, list[tuple[int, int]]], isr: list[int], **elr: list[int]
) -> Settings:
    """orders-0 on each broker of ``epochs`` (leader epoch, batches), and a metadata log in
    broker 1's log dir giving it no leader, every broker fenced."""
    dirs = {}
    for broker, written in epochs.items():
        dirs[broker] = tmp_path / f"b{broker}"
        layout = write_replica(dirs[broker], "orders", 0, written)
        write_broker_root(dirs[broker], broker, {("orders", 0): layout.log_end_offset})
    writer = MetadataLogWriter(dirs[1] / METADATA_PARTITION_DIR)
    writer.append(*(register_broker_record(b, b, fenced=True) for b in epochs))
    leadership = LeaderAndIsr(leader=r.NO_LEADER, isr=isr)
    record = partition_record(ORDERS, 0, sorted(epochs), leadership, **elr)
    writer.append(topic_record("orders", ORDERS), record)
    brokers = tuple(BrokerSpec(b, (path,)) for b, path in sorted(dirs.items()))
    return Settings.embedded(tmp_path, brokers=brokers, log_dirs=tuple(dirs.values()))


@pytest.mark.parametrize(
    ("epochs", "metadata", "expected"),
    [
        # Broker 3 has the newest epoch, but Kafka would elect only an ISR member.
        ({1: [(0, 10), (2, 5)], 2: [(0, 10), (1, 20)], 3: [(0, 10), (5, 3)]}, {"isr": [1, 2]}, 1),
        ({1: [(0, 10), (2, 5)], 2: [(0, 10), (2, 9)], 3: [(0, 4)]}, {"isr": [1, 2]}, 2),
        (
            {1: [(0, 10)], 2: [(0, 10)], 3: [(0, 10)]},
            {"isr": [], "elr": [1, 2], "last_known_elr": [2]},
            2,
        ),
        ({1: [(0, 10)], 2: [(0, 10)], 3: [(0, 4)]}, {"isr": [], "elr": [1, 2]}, 1),
        ({1: [(0, 10)], 2: [(0, 10), (3, 2)], 3: [(0, 12)]}, {"isr": [], "last_known_elr": [1]}, 1),
        ({1: [(0, 10)], 2: [(0, 10), (3, 2)], 3: [(0, 12)]}, {"isr": []}, 2),
    ],
    ids=[
        "isr-before-a-newer-epoch-outside",
        "isr-longest-log",
        "elr-tie-goes-to-the-last-known-leader",
        "elr-tie-lowest-id",
        "last-known-elr-alone",
        "none-named-newest-epoch-of-all",
    ],
)
def test_which_replica_stands_in(
    tmp_path: Path, epochs: dict, metadata: dict, expected: int
) -> None:
    found = leader_log(_stopped_partition(tmp_path, epochs, **metadata), "orders", 0)
    assert (found.broker, found.source) == (expected, "last-leader")
    newest = epochs[expected][-1][0]
    assert found.leader_epoch == newest, "the epoch its own checkpoint ends with"
