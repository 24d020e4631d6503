"""Leader-epoch arithmetic of Kafka's LeaderEpochFileCache and RemoteLogManager.

A fetch first asks which epoch an offset belongs to and then looks the segment up under that
epoch, so a segment written by a diverged leader for the same offsets is never served.

Codes like E9 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.metadata.models import RemoteLogSegment


def epoch_for_offset(entries: Sequence[EpochEntry], offset: int) -> int | None:
    """LeaderEpochFileCache.epochForOffset: the epoch of the last entry starting at or below."""
    found: int | None = None
    for entry in entries:
        if entry.start_offset == offset:
            return entry.epoch
        if entry.start_offset > offset:
            return found
        found = entry.epoch
    return found


def next_epoch(entries: Sequence[EpochEntry], epoch: int) -> int | None:
    """LeaderEpochFileCache.nextEpoch: the next higher epoch in the cache, if any."""
    higher = [entry.epoch for entry in entries if entry.epoch > epoch]
    return min(higher) if higher else None


def epochs_from_segments(segments: Iterable[RemoteLogSegment]) -> list[EpochEntry]:
    """A leader-epoch cache rebuilt from remote segments, for callers without the broker's.

    Each epoch starts at the lowest offset any segment gives it; as in Kafka's cache an entry
    must raise both the epoch and the start offset, so entries that would not are dropped.
    """
    starts: dict[int, int] = {}
    for segment in segments:
        for epoch, start in segment.leader_epochs:
            starts[epoch] = min(start, starts.get(epoch, start))
    entries: list[EpochEntry] = []
    for epoch, start in sorted(starts.items(), key=lambda item: (item[1], item[0])):
        if entries and (epoch <= entries[-1].epoch or start < entries[-1].start_offset):
            continue
        if entries and start == entries[-1].start_offset:
            entries.pop()  # the earlier epoch holds no records: the later one wins
        entries.append(EpochEntry(epoch, start))
    return entries


def lineage(entries: Sequence[EpochEntry]) -> dict[int, int]:
    """RLM.buildFilteredLeaderEpochMap: epoch -> start offset, epochs without records dropped."""
    filtered: dict[int, int] = {}
    ordered = list(entries)
    for i, entry in enumerate(ordered):
        if i + 1 < len(ordered) and ordered[i + 1].start_offset == entry.start_offset:
            continue
        filtered[entry.epoch] = entry.start_offset
    return filtered


def within_lineage(
    segment: RemoteLogSegment, log_end_offset: int, leader_epochs: dict[int, int]
) -> bool:
    """RLM.isRemoteSegmentWithinLeaderEpochs (E9): is the segment on this log's history?"""
    if not leader_epochs:
        return False
    seg_epochs = lineage([EpochEntry(e, s) for e, s in segment.leader_epochs])
    seg_keys = sorted(seg_epochs)
    keys = sorted(leader_epochs)
    seg_last = seg_keys[-1]
    if seg_last < keys[0] or seg_last > keys[-1]:
        return False
    seg_first = next((e for e in seg_keys if e >= keys[0]), None)
    if seg_first is None:
        return False
    for epoch in seg_keys:
        if epoch < seg_first:
            continue
        if epoch not in leader_epochs:
            return False
        has_lower = any(k < epoch for k in keys)
        if epoch == seg_first and has_lower and seg_epochs[epoch] < leader_epochs[epoch]:
            return False
        next_lineage = _higher_entry(leader_epochs, epoch)
        if epoch == seg_last:
            if next_lineage is not None and segment.end_offset > next_lineage[1] - 1:
                return False
        elif next_lineage != _higher_entry(seg_epochs, epoch):
            return False
    return segment.end_offset < log_end_offset


def _higher_entry(epochs: dict[int, int], epoch: int) -> tuple[int, int] | None:
    higher = [e for e in epochs if e > epoch]
    if not higher:
        return None
    key = min(higher)
    return key, epochs[key]
