"""An oracle for remote retention, written from Kafka's rules and not from tierflow's planner.

It restates ``RemoteLogManager.RLMExpirationTask.cleanupExpiredRemoteLogSegments`` (with
``RemoteLogRetentionHandler``, ``buildRetentionSizeData``, ``isRemoteSegmentWithinLeaderEpochs``,
``buildFilteredLeaderEpochMap`` and ``LeaderEpochFileCache.truncateFromStart``) over plain
tuples, and imports nothing of tierflow, so that a mistake in the planner cannot hide in the
oracle too. Where tierflow deliberately does better than Kafka it says so in one rule each,
as the README does:

* **Bytes count once.** Kafka counts a finished segment that lies below the log start offset
  but inside the lineage (its epoch is the cache's first) in the size total, deletes it for the
  log-start breach, and leaves its bytes in the total, so the size rule then deletes as many
  bytes again. After a DeleteRecords, or a run killed after it moved the log start, that
  deletes data retention.bytes allows. Here a segment's bytes leave the total when it goes,
  whichever rule took it.
* Failed deletes (DELETE_SEGMENT_STARTED) are finished wherever they lie, not only where the
  scan reaches them.
* An abandoned copy (COPY_SEGMENT_STARTED nobody works on) is deleted, and is never counted,
  never deleted for time or size, never moves the log start and never stops the scan.

The outcome is the set of segments deleted and the log start offset afterwards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

STARTED = "COPY_SEGMENT_STARTED"
FINISHED = "COPY_SEGMENT_FINISHED"
DELETING = "DELETE_SEGMENT_STARTED"


@dataclass(frozen=True)
class Seg:
    """One remote segment's metadata: its epochs are (epoch, start offset), ascending."""

    id: str
    start: int
    end: int
    epochs: tuple[tuple[int, int], ...]
    size: int
    max_ts: int
    state: str = FINISHED


@dataclass(frozen=True)
class Partition:
    """The leader's log as the expiration task sees it, and the topic's limits."""

    log_start: int
    log_end: int
    cache: tuple[tuple[int, int], ...]  # the leader-epoch-checkpoint, (epoch, start offset)
    only_local_bytes: int = 0
    retention_ms: int = -1
    retention_bytes: int = -1
    now_ms: int = 0
    being_copied: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Outcome:
    deleted: frozenset[str]
    log_start: int


def cache_from_start(cache: Sequence[tuple[int, int]], log_start: int) -> list[tuple[int, int]]:
    """LeaderEpochFileCache.truncateFromStart, which every raise of the log start runs: the
    entries at or below the new start fold into the last of them, which then starts there."""
    kept = [(e, o) for e, o in cache if o > log_start]
    folded = [(e, o) for e, o in cache if o <= log_start]
    return ([(folded[-1][0], log_start)] if folded else []) + kept


def with_records(entries: Sequence[tuple[int, int]]) -> dict[int, int]:
    """buildFilteredLeaderEpochMap: an epoch whose successor starts at the same offset wrote
    nothing and is dropped."""
    ordered = sorted(dict(entries).items())
    out: dict[int, int] = {}
    for i, (epoch, start) in enumerate(ordered):
        if i + 1 == len(ordered) or ordered[i + 1][1] != start:
            out[epoch] = start
    return out


def _next(lineage: dict[int, int], epoch: int) -> tuple[int, int] | None:
    later = sorted(e for e in lineage if e > epoch)
    return (later[0], lineage[later[0]]) if later else None


def in_lineage(seg: Seg, log_end: int, lineage: dict[int, int]) -> bool:
    """isRemoteSegmentWithinLeaderEpochs."""
    if not lineage:
        return False
    own = with_records(seg.epochs)
    first, last = min(lineage), max(lineage)
    seg_last = max(own)
    if not first <= seg_last <= last:
        return False
    candidates = [e for e in own if e >= first]
    if not candidates:
        return False
    seg_first = min(candidates)
    for epoch in sorted(own):
        if epoch < seg_first:
            continue
        if epoch not in lineage:
            return False
        if epoch == seg_first and epoch != first and own[epoch] < lineage[epoch]:
            return False
        following = _next(lineage, epoch)
        if epoch == seg_last:
            if following is not None and seg.end > following[1] - 1:
                return False
        elif following != _next(own, epoch):
            return False
    return seg.end < log_end


@dataclass
class _Run:
    """One expiration run's state, as RemoteLogRetentionHandler keeps it."""

    p: Partition
    lineage: dict[int, int]
    counted: set[str]
    over: int  # the bytes still over retention.bytes
    deleted: list[str] = field(default_factory=list)
    new_start: int | None = None

    def take(self, seg: Seg, *, moves_start: bool) -> None:
        self.deleted.append(seg.id)
        if seg.id in self.counted:
            self.over = max(0, self.over - seg.size)
            self.counted.discard(seg.id)
        if moves_start:
            self.new_start = max(self.new_start or 0, seg.end + 1)

    def time_breach(self, seg: Seg) -> bool:
        cutoff = self.p.now_ms - self.p.retention_ms
        return self.p.retention_ms > -1 and cutoff >= 0 and seg.max_ts < cutoff

    def size_breach(self, seg: Seg) -> bool:
        return self.p.retention_bytes > -1 and self.over > 0 and self.over - seg.size >= 0


def expire(segments: Iterable[Seg], p: Partition) -> Outcome:
    """What one expiration run deletes, and where the log start offset ends."""
    segs = sorted(segments, key=lambda s: s.start)
    cache = cache_from_start(p.cache, p.log_start)
    lineage = with_records(cache)
    counted = {s.id for s in segs if s.state == FINISHED and in_lineage(s, p.log_end, lineage)}
    total = p.only_local_bytes + sum(s.size for s in segs if s.id in counted)
    over = total - p.retention_bytes if p.retention_bytes > -1 else 0
    run = _Run(p, lineage, counted, max(0, over))
    for seg in segs:
        if seg.state == DELETING:
            run.take(seg, moves_start=False)
    _scan(run, segs)
    earliest = cache[0][0] if cache else None
    for seg in segs:  # segments whose every epoch predates the cache
        older = earliest is not None and all(e < earliest for e, _ in seg.epochs)
        if older and seg.state != STARTED and seg.id not in run.deleted:
            run.take(seg, moves_start=False)
    for seg in segs:
        if seg.state == STARTED and seg.id not in p.being_copied and seg.id not in run.deleted:
            run.take(seg, moves_start=False)
    start = p.log_start if run.new_start is None else max(p.log_start, run.new_start)
    return Outcome(frozenset(run.deleted), start)


def _scan(run: _Run, segs: list[Seg]) -> None:
    """The main loop: lineage epochs ascending, each epoch's segments by start offset."""
    first = min(run.lineage) if run.lineage else None
    for epoch in sorted(run.lineage):
        for seg in (s for s in segs if epoch in dict(s.epochs)):
            if seg.id in run.deleted:
                continue
            if seg.state == STARTED:
                if seg.id in run.p.being_copied:
                    return
                continue
            epochs = [e for e, _ in seg.epochs]
            if first is not None and max(epochs) <= first and seg.end < run.p.log_start:
                run.take(seg, moves_start=False)
                continue
            if not in_lineage(seg, run.p.log_end, run.lineage):
                continue
            if run.time_breach(seg) or run.size_breach(seg):
                run.take(seg, moves_start=True)
                continue
            return
