"""Leader-epoch lineages of replicas, and whether a follower's log is a prefix of the leader's.

Each replica's ``leader-epoch-checkpoint`` says at which offset each leader epoch began in its
log. After an unclean leader election the new leader's lineage wins and the other replicas
truncate to it on their next fetch (KIP-101, KIP-279). Until they do, a replica whose lineage
disagrees holds records the leader never had: it has diverged, and must not be read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from tierflow.cluster.replicas import Replica
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.leader_epoch import EpochEntry


@dataclass(frozen=True)
class ReplicaEpochs:
    """A replica and its leader-epoch entries; ``error`` when its checkpoint is unreadable."""

    replica: Replica
    entries: tuple[EpochEntry, ...]
    error: str | None = None

    @property
    def last_epoch(self) -> int | None:
        return self.entries[-1].epoch if self.entries else None


def read_epochs(replica: Replica) -> ReplicaEpochs:
    """The replica's leader-epoch-checkpoint; an empty (0-byte) file means no entries yet."""
    try:
        return ReplicaEpochs(replica, tuple(replica.log.leader_epoch_entries()))
    except (KafkaFormatError, OSError) as exc:
        return ReplicaEpochs(replica, (), error=str(exc))


def divergence(
    leader: Sequence[EpochEntry],
    follower: Sequence[EpochEntry],
    follower_end: Callable[[], int],
) -> str | None:
    """Why the follower's log is not a prefix of the leader's; None when it is.

    For every epoch the follower has, the leader must have it at the same start offset, and
    the follower's end within that epoch (its next epoch's start, or its log end offset for
    its last one) must not pass where the leader's next epoch starts. A follower that merely
    lags passes. Two exceptions come from Kafka's truncation of the epoch cache at the log
    start offset (``truncateFromStart``): epochs older than the leader's first entry are below
    the leader's log start and not compared, and the first epoch both have may start later on
    whichever replica deleted more of its log. ``follower_end`` is only called when needed:
    it reads the follower's last batch.
    """
    if not follower:
        return None
    if not leader:
        return f"has leader epochs from {follower[0].epoch} on, the leader none"
    starts = {entry.epoch: entry.start_offset for entry in leader}
    nexts = {a.epoch: b for a, b in pairwise(leader)}
    first_epoch = leader[0].epoch
    for i, entry in enumerate(follower):
        if entry.epoch < first_epoch:
            continue
        if entry.epoch not in starts:
            return f"has epoch {entry.epoch} (from offset {entry.start_offset}), the leader not"
        start = starts[entry.epoch]
        moved_start = (entry.epoch == first_epoch and entry.start_offset < start) or (
            i == 0 and entry.start_offset > start
        )
        if entry.start_offset != start and not moved_start:
            return (
                f"epoch {entry.epoch} starts at offset {entry.start_offset}, on the leader at "
                f"{start}"
            )
        later = nexts.get(entry.epoch)
        if later is None:
            continue  # the leader's current epoch: a follower only has what it fetched
        end = follower[i + 1].start_offset if i + 1 < len(follower) else follower_end()
        if end > later.start_offset:
            return (
                f"has offsets {later.start_offset}..{end - 1} in epoch {entry.epoch}, the "
                f"leader in epoch {later.epoch}"
            )
    return None
