"""Kafka's RemoteLogMetadataCache for one partition, replayed from the store's event history.

Kafka builds this cache by replaying ``__remote_log_metadata``; tierflow's ``metadata_events``
table is that topic, so replaying it gives exactly Kafka's per-epoch reference state (M4-M9 in
docs/kafka-behaviours.md): which COPY_SEGMENT_FINISHED segment serves an (epoch, offset), which
duplicates or overlaps were superseded, and each epoch's forward-only highest offset.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.metadata.epochs import epochs_from_segments
from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore

_STARTED = RemoteLogSegmentState.COPY_SEGMENT_STARTED
_FINISHED = RemoteLogSegmentState.COPY_SEGMENT_FINISHED
_DELETE_STARTED = RemoteLogSegmentState.DELETE_SEGMENT_STARTED
_DELETE_FINISHED = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED


@dataclass
class LeaderEpochState:
    """RemoteLogLeaderEpochState: the segments of one leader epoch."""

    starts: list[int] = field(default_factory=list)  # sorted keys of offset_to_id
    offset_to_id: dict[int, str] = field(default_factory=dict)  # COPY_FINISHED only
    unreferenced: list[str] = field(default_factory=list)  # insertion-ordered set
    highest_log_offset: int | None = None

    def floor(self, offset: int) -> str | None:
        i = bisect.bisect_right(self.starts, offset)
        return self.offset_to_id[self.starts[i - 1]] if i else None

    def referenced(self) -> list[str]:
        return [self.offset_to_id[start] for start in self.starts]

    def _put(self, start: int, segment_id: str) -> str | None:
        old = self.offset_to_id.get(start)
        if old is None:
            bisect.insort(self.starts, start)
        self.offset_to_id[start] = segment_id
        return old

    def _remove(self, start: int) -> str:
        self.starts.remove(start)
        return self.offset_to_id.pop(start)

    def _unreference(self, segment_id: str) -> None:
        if segment_id not in self.unreferenced:
            self.unreferenced.append(segment_id)

    def _discard(self, segment_id: str) -> None:
        if segment_id in self.unreferenced:
            self.unreferenced.remove(segment_id)

    def copy_started(self, segment_id: str) -> None:
        self._unreference(segment_id)

    def copy_finished(self, start: int, segment_id: str, epoch_end: int) -> None:
        """handleSegmentWithCopySegmentFinishedState, duplicates and overlaps included (M6)."""
        while (
            self.starts
            and self.starts[-1] >= start
            and (self.highest_log_offset is None or self.highest_log_offset <= epoch_end)
        ):
            self._unreference(self._remove(self.starts[-1]))
        old = self._put(start, segment_id)
        self._discard(segment_id)
        if old is not None and old != segment_id:
            self._unreference(old)
        if self.highest_log_offset is None or epoch_end > self.highest_log_offset:
            self.highest_log_offset = epoch_end

    def delete_started(self, start: int, segment_id: str) -> None:
        if self.offset_to_id.get(start) == segment_id:
            self._remove(start)
        self._unreference(segment_id)

    def delete_finished(self, segment_id: str) -> None:
        self._discard(segment_id)


class RemoteLogMetadataCache:
    """One partition's remote segments as Kafka's RLMM sees them."""

    def __init__(self, topic_id: str, partition: int) -> None:
        self.topic_id = topic_id
        self.partition = partition
        self.segments: dict[str, RemoteLogSegment] = {}  # every non-terminal segment
        self.epochs: dict[int, LeaderEpochState] = {}

    @classmethod
    def load(cls, store: MetadataStore, topic_id: str, partition: int) -> RemoteLogMetadataCache:
        """Replay the partition's segment events in the order they were written."""
        cache = cls(topic_id, partition)
        rows = {row.segment_id: row for row in store.segments(topic_id, partition)}
        events = store.events(topic_id=topic_id, partition=partition, entity=EventEntity.SEGMENT)
        replayed: dict[str, RemoteLogSegmentState] = {}
        for event in events:
            row = rows.get(event.segment_id or "")
            if row is None:
                continue
            state = RemoteLogSegmentState(event.to_state)
            cache.apply(row, state)
            replayed[row.segment_id] = state
        # Rows whose state the history does not explain (not written by this store) still count.
        for row in sorted(rows.values(), key=lambda r: (r.event_timestamp_ms, r.created_ms)):
            if replayed.get(row.segment_id) is not row.segment_state:
                cache.apply(row, row.segment_state)
        return cache

    def apply(self, segment: RemoteLogSegment, state: RemoteLogSegmentState) -> None:
        """One metadata event, as RemoteLogMetadataCache.add/updateRemoteLogSegmentMetadata."""
        pairs = segment.leader_epochs
        if state is _STARTED:
            for epoch, _start in pairs:
                self._epoch(epoch).copy_started(segment.segment_id)
            self.segments[segment.segment_id] = segment
        elif state is _FINISHED:
            for i, (epoch, start) in enumerate(pairs):
                end = pairs[i + 1][1] - 1 if i + 1 < len(pairs) else segment.end_offset
                self._epoch(epoch).copy_finished(start, segment.segment_id, end)
            self.segments[segment.segment_id] = segment
        elif state is _DELETE_STARTED:
            for epoch, start in pairs:
                self._epoch(epoch).delete_started(start, segment.segment_id)
            self.segments[segment.segment_id] = segment
        elif state is _DELETE_FINISHED:
            for epoch, _start in pairs:
                self._epoch(epoch).delete_finished(segment.segment_id)
            self.segments.pop(segment.segment_id, None)

    def _epoch(self, epoch: int) -> LeaderEpochState:
        return self.epochs.setdefault(epoch, LeaderEpochState())

    def segment_for(self, epoch: int, offset: int) -> RemoteLogSegment | None:
        """remoteLogSegmentMetadata(tp, epoch, offset) (M7): the FINISHED segment serving it."""
        state = self.epochs.get(epoch)
        segment_id = state.floor(offset) if state else None
        if segment_id is None:
            return None
        segment = self.segments[segment_id]
        later = [start for e, start in segment.leader_epochs if e > epoch]
        epoch_end = later[0] - 1 if later else segment.end_offset
        return segment if offset <= epoch_end else None

    def highest_offset_for_epoch(self, epoch: int) -> int | None:
        """highestOffsetForEpoch (M8): forward-only, deleted segments still count."""
        state = self.epochs.get(epoch)
        return None if state is None else state.highest_log_offset

    def list_segments(self, epoch: int | None = None) -> list[RemoteLogSegment]:
        """listRemoteLogSegments (M9): referenced and unreferenced, by start offset.

        Without an epoch: every non-terminal segment (sorted here for stable output).
        """
        if epoch is None:
            found = list(self.segments.values())
        else:
            state = self.epochs.get(epoch)
            if state is None:
                return []
            ids = state.referenced() + [
                i for i in state.unreferenced if i not in state.referenced()
            ]
            found = [self.segments[i] for i in ids if i in self.segments]
        return sorted(found, key=lambda segment: segment.start_offset)

    def finished(self) -> list[RemoteLogSegment]:
        """COPY_SEGMENT_FINISHED segments by start offset: the readable ones."""
        return [s for s in self.list_segments() if s.segment_state is _FINISHED]

    def is_referenced(self, segment_id: str) -> bool:
        return any(segment_id in state.offset_to_id.values() for state in self.epochs.values())

    def leader_epochs(self) -> list[EpochEntry]:
        """A leader-epoch cache rebuilt from the finished segments (no broker cache at hand)."""
        return epochs_from_segments(self.finished())

    def readable_range(self) -> tuple[int, int] | None:
        """(first start, last end) over referenced FINISHED segments, None if there are none."""
        referenced = [s for s in self.finished() if self.is_referenced(s.segment_id)]
        if not referenced:
            return None
        return min(s.start_offset for s in referenced), max(s.end_offset for s in referenced)
