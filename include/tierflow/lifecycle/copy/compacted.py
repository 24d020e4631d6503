"""Which local segments of a compacted topic may be copied, and from which offset.

Kafka never tiers a compacted topic (``UnifiedLog.isRemoteLogEnabled``). tierflow does, with
three rules on top of Kafka's copy rule (``candidates.py``), one for each way the broker's log
cleaner (``kafka/cleaner.py``) could otherwise tear or stall a copy:

1. Nothing is copied while a cleaning pass is replacing segments of the partition (a
   ``.cleaned`` or ``.swap`` file is there): a copy could read a segment's ``.log`` of one
   generation and its indexes of the next.
2. Only what the cleaner has cleaned: segments wholly below the first dirty offset of
   ``cleaner-offset-checkpoint``. The broker's own pass has then dropped what it could, so the
   remote tier starts compacted; later passes only drop more records, never move an offset, so
   a copy stays a faithful (if fuller) view of its offsets, which remote compaction cleans.
3. A candidate that starts below the copy's start offset holds offsets that are remote already:
   a later pass merged copied segments with uncopied ones. Only its batches from the start
   offset on are copied, as a segment of their own (a slice). Cleaning keeps each retained
   record in a batch within its old batch's offsets, so no batch spans the start offset, which
   was a segment boundary.

The copy then checks that the files it read were not replaced while it read them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tierflow.kafka.cleaner import CleanerState
from tierflow.kafka.segment import LogSegment
from tierflow.lifecycle.copy.candidates import CopyCandidate, candidate_segments, sliced_from


@dataclass(frozen=True)
class CompactedPlan:
    candidates: list[CopyCandidate] = field(default_factory=list)
    waiting: str | None = None  # why offsets Kafka's rule would copy wait, for the operator


def compacted_candidates(
    segments: Sequence[LogSegment], *, from_offset: int, upper_bound: int, cleaner: CleanerState
) -> CompactedPlan:
    """Kafka's candidates within what the cleaner has cleaned, slices where a pass merged
    copied segments with later ones; nothing while a pass is replacing segments."""
    kafkas = candidate_segments(segments, from_offset=from_offset, upper_bound=upper_bound)
    if not kafkas:
        return CompactedPlan()
    if cleaner.swapping:
        return CompactedPlan(waiting=f"the log cleaner is replacing {', '.join(cleaner.swapping)}")
    cleaned = [c for c in kafkas if c.next_base_offset <= cleaner.copy_bound()]
    chosen = [sliced_from(c, from_offset) for c in cleaned]
    if len(cleaned) == len(kafkas):
        return CompactedPlan(chosen)
    first_dirty = kafkas[len(cleaned)].base_offset
    return CompactedPlan(chosen, f"offsets from {first_dirty} wait for the log cleaner's next pass")
