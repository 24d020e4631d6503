"""Partitions in the log dirs whose leader replica is not read here, and why, said once.

A run that reads nothing must say why rather than "no partition matches": the leader is on a
broker tierflow is not given, or the partition has no leader and no replica can stand in for it
(``tierflow.cluster.inference``). The same words serve a command's error, a planning pass's
warning and ``tierflow status``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tierflow.cluster.inference import LeaderChoice, next_leaders

# Why, said of several partitions at once ("3 partitions <kind>"); kept in this order.
NO_REPLICA = "have no leader in the metadata and no replica could be singled out"
ELECTING = "have no leader now, in a live cluster that may still elect one"
NOT_CONFIGURED = "are led by a broker that is not configured"
KINDS = (NO_REPLICA, ELECTING, NOT_CONFIGURED)
NAMES_SHOWN = 20  # partitions named in one line; the rest are counted


@dataclass(frozen=True)
class UnreadPartition:
    """One partition not read: ``kind`` is one of KINDS, ``detail`` what of this partition
    (short, for a list), ``reason`` the whole sentence; ``leaderless``: the metadata gives it
    no leader."""

    topic: str
    partition: int
    kind: str
    detail: str
    reason: str
    leaderless: bool

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def as_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "reason": self.reason,
            "leaderless": self.leaderless,
        }


def unread_partition(topic: str, partition: int, choice: LeaderChoice) -> UnreadPartition:
    """Why ``choice`` (which has no local replica) leaves the partition unread."""
    source = choice.source
    if choice.leader is not None:
        reason = f"its leader, broker {choice.leader} ({source}), is not a configured broker"
        detail = f"broker {choice.leader}"
        return UnreadPartition(topic, partition, NOT_CONFIGURED, detail, reason, False)
    assignment = choice.assignment
    if assignment is not None and assignment.stopped:
        brokers = ", ".join(str(b) for b in next_leaders(assignment))
        detail = f"only brokers {brokers} may lead next"
        reason = (
            f"has no leader in the metadata ({source}), and none of the brokers that may lead "
            f"next ({brokers}) is configured"
        )
        return UnreadPartition(topic, partition, NO_REPLICA, detail, reason, True)
    reason = f"has no leader now ({source}), in a live cluster that may still elect one"
    return UnreadPartition(topic, partition, ELECTING, source, reason, True)


def why_unread(unread: Sequence[UnreadPartition]) -> str:
    """``3 partitions <kind>: a-0 (detail), …; 1 partition <kind>: …``, one clause per kind."""
    clauses = []
    for kind in KINDS:
        found = [u for u in unread if u.kind == kind]
        if found:
            names = named(f"{u.name} ({u.detail})" for u in found)
            clauses.append(f"{counted(len(found), kind)}: {names}")
    return "; ".join(clauses)


def last_leader_warning(taken: Sequence[tuple[str, int]]) -> str:
    """What a pass says once when it reads stopped partitions from their last leaders;
    ``taken``: (partition name, broker read)."""
    names = named(f"{name} (broker {broker})" for name, broker in taken)
    said = counted(len(taken), "have no leader in the KRaft metadata")
    return f"{said}, every replica's broker stopped: each is read from its last leader: {names}"


def named(names: Iterable[str], limit: int = NAMES_SHOWN) -> str:
    """The first ``limit`` names, then how many more."""
    listed = list(names)
    shown = ", ".join(listed[:limit])
    return shown + (f" and {len(listed) - limit} more" if len(listed) > limit else "")


def counted(n: int, kind: str) -> str:
    """``3 partitions have …``; ``1 partition has …``."""
    if n == 1:
        verb, _, rest = kind.partition(" ")
        return f"1 partition { ({'have': 'has', 'are': 'is'}.get(verb, verb)) } {rest}"
    return f"{n} partitions {kind}"
