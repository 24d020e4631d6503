"""The brokers' log dirs as one snapshot reads them: once, whatever the number of partitions.

With 10,000 partitions the page cannot afford what a single partition's task can: a glob and
a ``stat`` per segment in every section, or a root checkpoint file parsed again for every
partition (each parse reads one line per partition, so the page would be quadratic). Here:

* every partition's leader replica comes from ``tierflow.cluster.leaders`` (the broker it is
  on), with its log dir's checkpoints read at most once per snapshot; a stopped cluster's
  leaderless partition is its last leader's replica, marked ``leaderless``, and the partitions
  no replica is read of come with why;
* a partition's segments are listed with one ``scandir`` and their ``.log`` sizes kept, so the
  figures, the chart and the copy lag all see the same listing.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.cluster.assignments import LAST_LEADER
from tierflow.cluster.leaders import LeaderScan, leader_scan
from tierflow.cluster.unread import UnreadPartition
from tierflow.config import Settings
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.log_dir import LogDir, PartitionLog
from tierflow.kafka.naming import LOG_SUFFIX
from tierflow.kafka.segment import LogSegment

log = logging.getLogger(__name__)

PartitionName = tuple[str, int]  # (topic name, partition)
SegmentSize = tuple[int, int]  # (base offset, bytes of its .log)
OFFSET_DIGITS = 20  # a segment file is named by its base offset in 20 digits


class ReadOnceLogDir(LogDir):
    """A log dir whose root checkpoints are parsed once (a snapshot reads them per partition)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self._read: dict[str, dict[tuple[str, int], int]] = {}

    def checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        if name not in self._read:
            self._read[name] = super().checkpoint(name)
        return self._read[name]


@dataclass(frozen=True)
class ListedSegment(LogSegment):
    """A segment with the size its ``.log`` had when the partition was listed."""

    size: int = 0

    def size_in_bytes(self) -> int:
        return self.size


@dataclass
class ListedLog(PartitionLog):
    """A partition log listed once: ``segments()`` answers from that listing."""

    listed: tuple[ListedSegment, ...] = field(default=(), repr=False)

    def segments(self) -> list[LogSegment]:
        return list(self.listed)


@dataclass(frozen=True)
class Leader:
    broker: int
    log: PartitionLog  # checkpoints read once; segments listed afresh (retention planning)
    leaderless: bool = False  # no leader in the metadata: the stopped cluster's last leader


@dataclass(frozen=True)
class LocalLeaders:
    """The leader replicas by partition, and the partitions none is read of, with why."""

    leaders: dict[PartitionName, Leader]
    unread: list[UnreadPartition]


def read_leaders(settings: Settings) -> dict[PartitionName, Leader]:
    """Every partition's leader replica (see read_local_leaders)."""
    return read_local_leaders(settings).leaders


def read_local_leaders(settings: Settings) -> LocalLeaders:
    """Every partition's leader replica; none (with a warning) when a log dir cannot be read,
    so that the page still shows the store's figures."""
    present = tuple(Path(d) for d in settings.log_dirs if Path(d).is_dir())
    try:
        scan = leader_scan(settings.updated(log_dirs=present))
    except (KafkaFormatError, ValueError) as exc:
        log.warning("operator view without local figures: %s", exc)
        scan = LeaderScan()
    dirs: dict[Path, ReadOnceLogDir] = {}
    leaders = {}
    for leader in scan.found:
        old = leader.log.log_dir
        shared = dirs.get(old.path) or dirs.setdefault(old.path, ReadOnceLogDir(old.path))
        found_log = PartitionLog(leader.log.topic, leader.log.partition, leader.log.path, shared)
        last = leader.source == LAST_LEADER
        leaders[leader.log.key] = Leader(leader.broker, found_log, leaderless=last)
    return LocalLeaders(leaders, scan.unread)


def segment_sizes(log_: PartitionLog) -> list[SegmentSize]:
    """(base offset, ``.log`` size) of the partition's segments, ascending, from one
    ``scandir``: the segments ``PartitionLog.segments`` finds (``.log`` files named by a
    20-digit offset), without a Path and a ``stat`` call per segment."""
    found = []
    try:
        with os.scandir(log_.path) as entries:
            for entry in entries:
                if _is_segment_log(entry.name) and (size := _size(entry)) is not None:
                    found.append((int(entry.name[:OFFSET_DIGITS]), size))
    except FileNotFoundError:
        return []  # the partition went while it was listed (a reassignment, a deletion)
    found.sort()
    return found


def listed_log(log_: PartitionLog, sizes: list[SegmentSize]) -> ListedLog:
    """The partition log whose ``segments()`` are ``sizes``: one listing for every figure."""
    segments = tuple(ListedSegment(base, log_.path, size) for base, size in sizes)
    return ListedLog(log_.topic, log_.partition, log_.path, log_.log_dir, segments)


def _is_segment_log(name: str) -> bool:
    return (
        name.endswith(LOG_SUFFIX)
        and len(name) == OFFSET_DIGITS + len(LOG_SUFFIX)
        and name[:OFFSET_DIGITS].isdigit()
    )


def _size(entry: os.DirEntry[str]) -> int | None:
    """None when retention or the cleaner removed the segment since the listing."""
    try:
        return entry.stat().st_size
    except FileNotFoundError:
        return None
