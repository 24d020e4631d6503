"""Which remote segments a compaction pass takes, and in which groups: pure rules, Kafka's.

Kafka's cleaner (``LogCleanerManager``, ``LogCleaner.groupSegmentsBySize``) decides per log:

- the cleanable range ends before the first segment holding a record younger than
  ``min.compaction.lag.ms`` (measured, as Kafka does, on the segment's largest timestamp) and
  before the active segment; tierflow also ends it before the head that is still on the broker
  (offsets from the local log start on): the remote tier never holds a compaction the local log
  disagrees with, and a segment a broker may still clean stays the broker's;
- a log is cleaned when its dirty ratio (dirty bytes over all cleanable bytes, the dirty ones
  being those after the clean section) reaches ``min.cleanable.dirty.ratio``, or when its
  first dirty segment is older than ``max.compaction.lag.ms``;
- the segments are cleaned in groups of consecutive segments whose sizes add up to at most
  ``segment.bytes`` and whose offsets span less than 2^31 (the indexes keep 4-byte relative
  offsets); each group becomes one segment with the group's first base offset.

Where Kafka measures the max lag on the first dirty batch's timestamp, tierflow has the
segment's largest one (the store keeps no other): a pass may be forced a little later.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Protocol, TypeVar

MAX_RELATIVE_OFFSET = (1 << 31) - 1


class SegmentLike(Protocol):
    segment_id: str
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    segment_size_bytes: int


S = TypeVar("S", bound=SegmentLike)


class PartitionLike(Protocol):
    """The partition row's offsets the rules read."""

    log_start_offset: int
    local_log_start_offset: int
    remote_cleaned_offset: int  # the end of the clean section (-1: none)


@dataclass(frozen=True)
class CompactionRules:
    """A topic's compaction configs (Kafka's names in the comments)."""

    segment_bytes: int  # segment.bytes
    delete_retention_ms: int  # delete.retention.ms
    min_compaction_lag_ms: int  # min.compaction.lag.ms
    max_compaction_lag_ms: int  # max.compaction.lag.ms
    min_cleanable_dirty_ratio: float  # min.cleanable.dirty.ratio

    @classmethod
    def of(cls, topic: object) -> CompactionRules:
        """The rules of a registered topic (or a TopicConfig): both name each config as the
        field here does, so every field is read by its own name."""
        return cls(**{f.name: getattr(topic, f.name) for f in fields(cls)})


def cleanable_range(
    finished: Sequence[S], state: PartitionLike, rules: CompactionRules, now_ms: int
) -> list[S]:
    """The consecutive segments from the remote log's start that a pass may compact."""
    taken: list[S] = []
    for segment in sorted(finished, key=lambda s: s.start_offset):
        if segment.end_offset < state.log_start_offset:
            continue  # remote retention is deleting it
        if segment.end_offset >= state.local_log_start_offset:
            break  # the head that is still local
        if segment.max_timestamp_ms > now_ms - rules.min_compaction_lag_ms:
            break  # younger than min.compaction.lag.ms
        if taken and segment.start_offset != taken[-1].end_offset + 1:
            break  # a hole: only a contiguous run is one log
        taken.append(segment)
    return taken


def needs_compaction(
    segments: Sequence[SegmentLike], state: PartitionLike, rules: CompactionRules, now_ms: int
) -> str | None:
    """Why the range is compacted now (the dirty ratio, or the max lag), or None."""
    dirty = [s for s in segments if s.start_offset > state.remote_cleaned_offset]
    if not dirty:
        return None
    total = sum(s.segment_size_bytes for s in segments)
    ratio = sum(s.segment_size_bytes for s in dirty) / total if total else 0.0
    if ratio >= rules.min_cleanable_dirty_ratio:
        return f"dirty ratio {ratio:.2f} >= min.cleanable.dirty.ratio"
    if dirty[0].max_timestamp_ms <= now_ms - rules.max_compaction_lag_ms:
        return "the first dirty segment is older than max.compaction.lag.ms"
    return None


def group_by_size(segments: Sequence[S], segment_bytes: int) -> list[list[S]]:
    """LogCleaner.groupSegmentsBySize: consecutive segments, at most ``segment_bytes`` together
    (a bigger segment alone), spanning less than 2^31 offsets."""
    groups: list[list[S]] = []
    for segment in segments:
        group = groups[-1] if groups else None
        if (
            group is not None
            and sum(s.segment_size_bytes for s in group) + segment.segment_size_bytes
            <= segment_bytes
            and segment.end_offset - group[0].start_offset <= MAX_RELATIVE_OFFSET
        ):
            group.append(segment)
        else:
            groups.append([segment])
    return groups


def before_open_transaction(segments: Sequence[S], first_open: int | None) -> list[S]:
    """The segments wholly before the first offset of a transaction still open at the end of
    the tiered log (its marker is not tiered yet, so whether it commits is not known): Kafka's
    cleaner stops before the first unstable offset likewise."""
    if first_open is None:
        return list(segments)
    return [s for s in segments if s.end_offset < first_open]
