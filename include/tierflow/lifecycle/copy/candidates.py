"""Which local segments may be copied: Kafka's RLMCopyTask.candidateLogSegments, exactly.

Copying starts at max(highest remote offset + 1, log start offset). Segments are taken as
consecutive pairs (prev, next): prev qualifies only if next's base offset is at or below the
upper bound, the last stable offset (the high watermark held back by open transactions; see
kafka/last_stable_offset.py), so the active segment never qualifies and neither does a segment
that still holds offsets above it. A segment's end offset is the next segment's base offset
minus one, not its last record offset.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from tierflow.kafka.checkpoint import LOG_START_OFFSET_CHECKPOINT
from tierflow.kafka.cleaner import cleaner_state
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.segment import LogSegment


@dataclass(frozen=True)
class CopyCandidate:
    segment: LogSegment
    next_base_offset: int
    # A compacted segment's tail from this offset on (lifecycle/copy/compacted.py); None: whole.
    slice_from: int | None = None

    @property
    def base_offset(self) -> int:
        return self.segment.base_offset

    @property
    def start_offset(self) -> int:
        """The first offset the remote segment holds: the base offset, or the slice's start."""
        return self.base_offset if self.slice_from is None else self.slice_from

    @property
    def end_offset(self) -> int:
        return self.next_base_offset - 1


def copy_start_offset(highest_remote_offset: int, log_start_offset: int) -> int:
    return max(highest_remote_offset + 1, log_start_offset)


def candidate_segments(
    segments: Sequence[LogSegment], *, from_offset: int, upper_bound: int
) -> list[CopyCandidate]:
    """Segments to copy, ascending. ``segments`` must be sorted by base offset."""
    if upper_bound <= 0:
        return []
    candidates = []
    for prev, nxt in pairwise(segments):
        if nxt.base_offset <= from_offset:
            continue  # prev ends below from_offset: already remote or below the log start
        if nxt.base_offset > upper_bound:
            break
        candidates.append(CopyCandidate(prev, nxt.base_offset))
    return candidates


def sliced_from(candidate: CopyCandidate, offset: int) -> CopyCandidate:
    """The candidate, or its tail from ``offset`` when it starts below it (a slice)."""
    if candidate.base_offset >= offset:
        return candidate
    return replace(candidate, slice_from=offset)


def past_the_remote_end(
    candidates: Sequence[CopyCandidate], highest_remote_offset: int
) -> list[CopyCandidate]:
    """No offset copied twice: a candidate holding offsets that are remote already is sliced
    at the first offset that is not. It happens when the leader changed between two copies and
    the new leader's replica rolled its segments elsewhere. Kafka copies that segment whole and
    lets the remote segments overlap (its reads choose by leader epoch); a remote tier without
    overlaps reads, restores and exports the same records once. Replicas hold the same batches,
    so the remote end, a segment boundary of the old leader, is a batch boundary here too."""
    return [sliced_from(c, highest_remote_offset + 1) for c in candidates]


def copy_backlog_bytes(
    log_: PartitionLog,
    *,
    highest_remote_offset: int,
    remote_log_start_offset: int,
    compacted: bool = False,
) -> int:
    """Bytes a copy of this partition would take, bounded by the high watermark (and, for a
    compacted topic, by what the log cleaner has cleaned: see compacted.py).

    The planner's cheap look: a directory listing and the root checkpoints, no segment read.
    The high watermark is at or above the last stable offset, so a partition this finds idle
    has nothing to copy; prepare applies the exact bound (open transactions) to the others.
    """
    high_watermark = log_.high_watermark()
    segments = log_.segments()
    if high_watermark is None or not segments:
        return 0
    if compacted:
        high_watermark = min(high_watermark, cleaner_state(log_).copy_bound())
    checkpointed = log_.log_dir.checkpoint(LOG_START_OFFSET_CHECKPOINT).get(log_.key)
    log_start = max(remote_log_start_offset, checkpointed or segments[0].base_offset)
    start = copy_start_offset(highest_remote_offset, log_start)
    candidates = candidate_segments(segments, from_offset=start, upper_bound=high_watermark)
    return sum(c.segment.size_in_bytes() for c in candidates)
