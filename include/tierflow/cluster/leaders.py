"""The leader replica of every partition: the only replica tierflow reads data from.

Kafka's RemoteLogManager copies and expires only on the leader; tierflow reads the leader's
replica for the same reason: a lagging follower's high watermark would hold copies back, and
a diverged one holds records the leader never had. The leader is what the cluster says
(TIERFLOW_KAFKA_BOOTSTRAP), else what the KRaft metadata log in a log dir says, else it is
inferred from the replicas' leader-epoch checkpoints (``tierflow.cluster.inference``). A
partition whose leader is none of the configured brokers, or that has no leader now, is not
read here; ``leader_scan`` says why (``tierflow.cluster.unread``). The one exception is a
partition of a stopped cluster, which the KRaft metadata leaves leaderless: its last leader
stands in, and every pass over the leaders warns once, naming them. A live cluster's leaderless
partition (the cluster's word, or a replica on a broker the metadata has active) is never read:
a leader may be being elected, and its log may change under the copy.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.cluster.assignments import INFERRED, LAST_LEADER, known_assignments
from tierflow.cluster.brokers import Broker, SnapshotLogDir, cluster_brokers
from tierflow.cluster.divergence import diverged_replicas, replica_epochs
from tierflow.cluster.inference import LeaderChoice, choose_leader
from tierflow.cluster.replicas import open_log_dirs, replicas_of
from tierflow.cluster.scan import PartitionState, scan_cluster
from tierflow.cluster.unread import UnreadPartition, last_leader_warning, unread_partition
from tierflow.config import Settings
from tierflow.kafka.log_dir import PartitionLog
from tierflow.runtime import UnknownPartitionError, shared

log = logging.getLogger(__name__)


class LeaderNotLocalError(UnknownPartitionError):
    """The partition is here, but its leader is another broker, or it has no leader now."""


@dataclass(frozen=True)
class LeaderLog:
    """A partition's leader replica: the broker that holds it, its log, and how it was found.

    ``source`` is ``cluster``, ``kraft`` or ``inferred``; ``leader_epoch`` is the epoch Kafka
    recorded, or for an inferred leader the newest in its leader-epoch-checkpoint.
    """

    broker: int
    log: PartitionLog
    source: str = INFERRED
    leader_epoch: int | None = None


@dataclass(frozen=True)
class LeaderScan:
    """Every partition in the log dirs: its leader replica, or why none is read."""

    found: list[LeaderLog] = field(default_factory=list)  # sorted by topic and partition
    unread: list[UnreadPartition] = field(default_factory=list)


def leader_logs(settings: Settings) -> list[LeaderLog]:
    """Every partition's leader replica, sorted by topic and partition."""
    return leader_scan(settings).found


def leader_scan(settings: Settings) -> LeaderScan:
    """Every partition's leader replica, and the partitions none is read of; warns once for
    the stopped partitions read from their last leader."""
    scan = LeaderScan()
    for view in scan_cluster(settings).partitions:
        if view.choice.replica is not None:
            scan.found.append(_leader_log(view.choice))
            _warn_diverged(view)
        else:
            unread = unread_partition(view.topic, view.partition, view.choice)
            log.info("%s: %s", unread.name, unread.reason)
            scan.unread.append(unread)
    last = [
        (f"{f.log.topic}-{f.log.partition}", f.broker)
        for f in scan.found
        if f.source == LAST_LEADER
    ]
    if last:
        log.warning("%s", last_leader_warning(last))
    return scan


def leader_log(settings: Settings, topic: str, partition: int) -> LeaderLog:
    """One partition's leader replica; UnknownPartitionError when no broker holds it.

    Only this partition's directory is looked up in each broker's log dirs.
    """
    brokers, log_dirs = _opened_log_dirs(settings)
    replicas = replicas_of(log_dirs, topic, partition)
    if not replicas:
        dirs = ", ".join(str(p) for b in brokers for p in b.log_dirs)
        raise UnknownPartitionError(f"no directory {topic}-{partition} in the log dirs ({dirs})")
    known = known_assignments(settings, _all_dirs(brokers), [(topic, partition)])
    choice = choose_leader(replicas, known.get((topic, partition)))
    if choice.replica is None:
        unread = unread_partition(topic, partition, choice)
        raise LeaderNotLocalError(f"{unread.name}: {unread.reason}")
    if choice.source == LAST_LEADER:  # the pass that planned the run warned
        log.info("%s-%d: read from its last leader, broker %d", topic, partition, choice.leader)
    return _leader_log(choice)


def _warn_diverged(view: PartitionState) -> None:
    """Say so when a follower diverged from its leader: it is never read, and needs fixing."""
    if len(view.replicas) < 2:
        return
    epochs = replica_epochs(view.choice, view.replicas)
    for replica in diverged_replicas(view.choice, epochs):
        log.warning(
            "%s-%d: the replica on broker %d diverged from leader %s (%s); only the leader's "
            "is read",
            view.topic,
            view.partition,
            replica.broker,
            view.choice.leader,
            replica.reason,
        )


def _opened_log_dirs(settings: Settings) -> tuple[list[Broker], dict[int, list[SnapshotLogDir]]]:
    """The brokers and their log dirs, opened once per runtime.shared_resources() scope (a
    shard task), so each root checkpoint is parsed once for all its partitions, not once
    per partition; outside such a scope, afresh on every call."""

    def open_now() -> tuple[list[Broker], dict[int, list[SnapshotLogDir]]]:
        brokers = cluster_brokers(settings)
        return brokers, open_log_dirs(brokers)

    return shared(("cluster_log_dirs",), settings, open_now)


def _leader_log(choice: LeaderChoice) -> LeaderLog:
    assert choice.replica is not None
    return LeaderLog(choice.replica.broker, choice.replica.log, choice.source, choice.leader_epoch)


def _all_dirs(brokers: list[Broker]) -> list[Path]:
    return [path for broker in brokers for path in broker.log_dirs]
