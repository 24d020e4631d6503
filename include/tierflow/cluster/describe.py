"""What ``tierflow cluster describe`` shows: brokers, and per partition its leader and replicas.

Beyond what planning needs, it compares every follower's leader-epoch lineage with the
leader's, so a replica that diverged after an unclean election is reported (it is never read).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tierflow.cluster.brokers import Broker
from tierflow.cluster.divergence import DivergedReplica, diverged_replicas, replica_epochs
from tierflow.cluster.scan import PartitionState, scan_cluster
from tierflow.config import Settings


@dataclass(frozen=True)
class PartitionDescription:
    """One partition; ``assigned`` and ``isr`` are known only from the cluster or KRaft log."""

    topic: str
    partition: int
    leader: int | None
    leader_epoch: int | None
    source: str
    leader_local: bool
    replicas: tuple[int, ...]  # brokers whose log dirs hold it
    assigned: tuple[int, ...] | None
    isr: tuple[int, ...] | None
    diverged: tuple[DivergedReplica, ...]
    problems: tuple[str, ...]  # replicas whose files could not be read

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "leader_source": self.source,
            "leader_local": self.leader_local,
            "replicas": list(self.replicas),
            "assigned_replicas": None if self.assigned is None else list(self.assigned),
            "isr": None if self.isr is None else list(self.isr),
            "diverged": [{"broker": d.broker, "reason": d.reason} for d in self.diverged],
            "problems": list(self.problems),
        }


@dataclass(frozen=True)
class ClusterDescription:
    brokers: tuple[Broker, ...]
    partitions: tuple[PartitionDescription, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "brokers": [
                {"broker": b.broker_id, "log_dirs": [str(p) for p in b.log_dirs]}
                for b in self.brokers
            ],
            "partitions": [p.as_json() for p in self.partitions],
        }


def describe_cluster(settings: Settings, topic: str | None = None) -> ClusterDescription:
    """Every partition (of ``topic``, when given), its leader, replicas and diverged ones."""
    scan = scan_cluster(settings, topic)
    return ClusterDescription(scan.brokers, tuple(_describe(state) for state in scan.partitions))


def _describe(state: PartitionState) -> PartitionDescription:
    choice = state.choice
    epochs = replica_epochs(choice, state.replicas)
    problems = tuple(
        f"broker {broker}: {e.error}" for broker, e in sorted(epochs.items()) if e.error
    )
    assignment = choice.assignment
    return PartitionDescription(
        topic=state.topic,
        partition=state.partition,
        leader=choice.leader,
        leader_epoch=choice.leader_epoch,
        source=choice.source,
        leader_local=choice.replica is not None,
        replicas=tuple(r.broker for r in state.replicas),
        assigned=assignment.replicas if assignment else None,
        isr=assignment.isr if assignment else None,
        diverged=diverged_replicas(choice, epochs),
        problems=problems,
    )
