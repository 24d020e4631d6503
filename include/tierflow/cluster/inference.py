"""Which replica leads a partition: as Kafka recorded it, else inferred from the log dirs.

Without the controller's word, the replica with the newest leader epoch in its
``leader-epoch-checkpoint`` is the one the latest leader wrote, and every other replica
truncates to its lineage (KIP-101). Among replicas with the same newest epoch the one with the
highest log end offset is the leader (followers only ever fetch a prefix of the leader's log);
a full tie goes to the lowest broker id, so the answer is stable. Such a leader is marked
``inferred``.

A cleanly stopped KRaft cluster's metadata gives its partitions no leader: each broker's
controlled shutdown moved its leaderships away, and the last ISR member's went nowhere. Kafka
would elect, once brokers return, the ISR's (KIP-966: else the eligible leader replicas', else
the last known leader's) replica; among those held here the same inference picks the one with
the newest epoch and longest log, a full tie going to the last known leader. Such a leader is
marked ``last-leader``. Only stopped partitions get one (``Assignment.stopped``): with a
replica on a broker the controller could still elect, a leader may be on its way, and that
broker's log may still change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from tierflow.cluster.assignments import INFERRED, LAST_LEADER, Assignment
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
    """Kafka's recorded leader when known, a stopped partition's last leader, else the
    inferred one."""
    if assignment is None:
        return infer_leader(replicas)
    if assignment.leader is None and assignment.stopped:
        return last_leader(replicas, assignment)
    local = next((r for r in replicas if r.broker == assignment.leader), None)
    return LeaderChoice(
        assignment.leader, local, assignment.leader_epoch, assignment.source, assignment
    )


def last_leader(replicas: Sequence[Replica], assignment: Assignment) -> LeaderChoice:
    """Among the held replicas the metadata lets lead next (all, when it names none), the
    inferred leader; no leader when none of those is held here."""
    eligible = next_leaders(assignment)
    held = [r for r in replicas if not eligible or r.broker in eligible]
    if not held:
        return LeaderChoice(None, None, assignment.leader_epoch, assignment.source, assignment)
    last_known = assignment.last_known_elr
    found = infer_leader(held, prefer=last_known[0] if len(last_known) == 1 else None)
    return replace(found, source=LAST_LEADER, assignment=assignment)


def next_leaders(assignment: Assignment) -> tuple[int, ...]:
    """Whom a clean election would take when brokers return (PartitionChangeBuilder): the
    ISR, which Kafka never empties without KIP-966, else the eligible leader replicas, else
    the last known ones; empty when the metadata names none."""
    for named in (assignment.isr or (), assignment.elr, assignment.last_known_elr):
        if named:
            return named
    return ()


def infer_leader(replicas: Sequence[Replica], *, prefer: int | None = None) -> LeaderChoice:
    """Newest epoch, then highest log end offset (read only on a tie), then ``prefer``, then
    lowest broker."""
    epochs = {r.broker: read_epochs(r) for r in replicas}
    newest = max(_rank(e) for e in epochs.values())
    tied = [e.replica for e in epochs.values() if _rank(e) == newest]
    if len(tied) > 1:
        ends = {r.broker: _safe_log_end(r) for r in tied}
        highest = max(ends.values())
        tied = [r for r in tied if ends[r.broker] == highest]
    leader = min(tied, key=lambda r: (r.broker != prefer, r.broker))
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
