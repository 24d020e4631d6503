"""One pass over the whole cluster: brokers, every partition's replicas and its leader.

Each log dir is listed once and its root checkpoints read once; each replica's
leader-epoch-checkpoint is read at most once, and a log end offset only when epochs tie.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierflow.cluster.assignments import known_assignments
from tierflow.cluster.brokers import Broker, cluster_brokers
from tierflow.cluster.inference import LeaderChoice, choose_leader
from tierflow.cluster.replicas import Replica, all_replicas, open_log_dirs
from tierflow.config import Settings


@dataclass(frozen=True)
class PartitionState:
    topic: str
    partition: int
    replicas: tuple[Replica, ...]  # by broker id
    choice: LeaderChoice


@dataclass(frozen=True)
class ClusterScan:
    brokers: tuple[Broker, ...]
    partitions: tuple[PartitionState, ...]  # by topic and partition


def scan_cluster(settings: Settings, topic: str | None = None) -> ClusterScan:
    """Every partition (of ``topic``, when given) with its replicas and leader."""
    brokers = cluster_brokers(settings)
    replicas = all_replicas(open_log_dirs(brokers))
    keys = sorted(k for k in replicas if topic is None or k[0] == topic)
    dirs = [path for broker in brokers for path in broker.log_dirs]
    known = known_assignments(settings, dirs, keys)
    states = tuple(
        PartitionState(*key, tuple(replicas[key]), choose_leader(replicas[key], known.get(key)))
        for key in keys
    )
    return ClusterScan(tuple(brokers), states)
