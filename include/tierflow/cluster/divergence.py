"""Followers whose log is not a prefix of their leader's: diverged after an unclean election.

Such a replica holds records the leader never had. It is never read; ``cluster describe`` lists
it and every planning pass that reads the leaders logs a warning naming it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tierflow.cluster.inference import LeaderChoice
from tierflow.cluster.lineage import ReplicaEpochs, divergence, read_epochs
from tierflow.cluster.log_end import log_end_offset
from tierflow.cluster.replicas import Replica
from tierflow.kafka.errors import KafkaFormatError


@dataclass(frozen=True)
class DivergedReplica:
    broker: int
    reason: str


def replica_epochs(choice: LeaderChoice, replicas: tuple[Replica, ...]) -> dict[int, ReplicaEpochs]:
    """Each replica's leader-epoch lineage: as inference read it, else read now."""
    return {r.broker: choice.epochs.get(r.broker) or read_epochs(r) for r in replicas}


def diverged_replicas(
    choice: LeaderChoice, epochs: dict[int, ReplicaEpochs]
) -> tuple[DivergedReplica, ...]:
    """Followers whose log is not a prefix of the leader's; none when the leader is not here."""
    if choice.replica is None or epochs[choice.replica.broker].error:
        return ()
    lineage = epochs[choice.replica.broker].entries
    found = []
    for broker, follower in sorted(epochs.items()):
        if broker == choice.replica.broker or follower.error:
            continue
        reason = divergence(lineage, follower.entries, _end_of(follower.replica))
        if reason is not None:
            found.append(DivergedReplica(broker, reason))
    return tuple(found)


def _end_of(replica: Replica) -> Callable[[], int]:
    """The follower's log end offset, read only if the lineage comparison needs it."""

    def end() -> int:
        try:
            return log_end_offset(replica.log)
        except (KafkaFormatError, OSError):
            return 0  # unreadable: nothing of it can pass the leader's epochs

    return end
