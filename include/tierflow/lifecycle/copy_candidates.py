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
from dataclasses import dataclass
from itertools import pairwise

from tierflow.kafka.segment import LogSegment


@dataclass(frozen=True)
class CopyCandidate:
    segment: LogSegment
    next_base_offset: int

    @property
    def base_offset(self) -> int:
        return self.segment.base_offset

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
