"""Which replica leads a partition: as Kafka recorded it, else inferred from the log dirs.

Without the controller's word, the replica with the newest leader epoch in its
``leader-epoch-checkpoint`` is the one the latest leader wrote, and every other replica
truncates to its lineage (KIP-101). Among replicas with the same newest epoch the one with the
highest log end offset is the leader (followers only ever fetch a prefix of the leader's log);
a full tie goes to the lowest broker id, so the answer is stable. Such a leader is marked
``inferred``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tierflow.cluster.assignments import INFERRED, Assignment
from tierflow.cluster.lineage import ReplicaEpochs, read_epochs
from tierflow.cluster.log_end import log_end_offset
from tierflow.cluster.replicas import Replica
from tierflow.kafka.errors import KafkaFormatError


@dataclass(frozen=True)
class LeaderChoice:
    """The leader of one partition; ``replica`` is None when no configured broker holds it."""

    leader: int | None
    replica: Replica | None
    leader_epoch: int | None
    source: str
    assignment: Assignment | None = None
    epochs: dict[int, ReplicaEpochs] = field(default_factory=dict)  # as read, by broker


def choose_leader(replicas: Sequence[Replica], assignment: Assignment | None) -> LeaderChoice:
    """Kafka's recorded leader when known, else the inferred one."""
    if assignment is None:
        return infer_leader(replicas)
    local = next((r for r in replicas if r.broker == assignment.leader), None)
    return LeaderChoice(
        assignment.leader, local, assignment.leader_epoch, assignment.source, assignment
    )


def infer_leader(replicas: Sequence[Replica]) -> LeaderChoice:
    """Newest epoch, then highest log end offset (read only on a tie), then lowest broker."""
    epochs = {r.broker: read_epochs(r) for r in replicas}
    newest = max(_rank(e) for e in epochs.values())
    tied = [e.replica for e in epochs.values() if _rank(e) == newest]
    if len(tied) > 1:
        ends = {r.broker: _safe_log_end(r) for r in tied}
        highest = max(ends.values())
        tied = [r for r in tied if ends[r.broker] == highest]
    leader = min(tied, key=lambda r: r.broker)
    return LeaderChoice(
        leader.broker, leader, epochs[leader.broker].last_epoch, INFERRED, epochs=epochs
    )


def _rank(epochs: ReplicaEpochs) -> int:
    """The newest epoch; a replica with none (or an unreadable checkpoint) ranks lowest."""
    last = epochs.last_epoch
    return -1 if last is None else last


def _safe_log_end(replica: Replica) -> int:
    """A replica whose log cannot be read ranks below every readable one."""
    try:
        return log_end_offset(replica.log)
    except (KafkaFormatError, OSError):
        return -1
