"""Segments a compaction replaced: found from the state alone, so a rerun can finish a swap.

A compaction records its new segments COPY_SEGMENT_FINISHED before it deletes the segments they
replace. Between the two, both are FINISHED and overlap: a new segment's range holds the whole
of each segment it replaced (a group's new segment has the group's first base offset and last
offset). No other path writes overlapping segments (a copy starts after the highest remote
offset, a slice at the first uncopied one), so a FINISHED segment lying within the range of one
finished after it was replaced, whoever was interrupted: the next run deletes it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore


def superseded(store: MetadataStore, topic_id: str, partition: int) -> list[RemoteLogSegment]:
    """The partition's FINISHED segments that a later FINISHED one covers, by start offset."""
    finished = store.segments(topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
    pairs = covered_pairs(finished)
    if not pairs:
        return []
    order = finish_order(store, topic_id, partition)
    gone = {
        row.segment_id: row
        for row, cover in pairs
        if order.get(cover.segment_id, -1) > order.get(row.segment_id, -1)
    }
    return sorted(gone.values(), key=lambda row: row.start_offset)


def covered_pairs(
    rows: Sequence[RemoteLogSegment],
) -> list[tuple[RemoteLogSegment, RemoteLogSegment]]:
    """(row, another row whose range holds it), by one sweep in start order; two rows of the
    same range hold each other."""
    pairs = []
    cover: RemoteLogSegment | None = None
    for row in sorted(rows, key=lambda r: (r.start_offset, -r.end_offset)):
        if cover is not None and cover.end_offset >= row.end_offset:
            pairs.append((row, cover))
            if (cover.start_offset, cover.end_offset) == (row.start_offset, row.end_offset):
                pairs.append((cover, row))
        if cover is None or row.end_offset > cover.end_offset:
            cover = row
    return pairs


def finish_order(store: MetadataStore, topic_id: str, partition: int) -> dict[str, int]:
    """Each segment's COPY_SEGMENT_FINISHED event id: the order the history wrote them in."""
    events = store.events(topic_id=topic_id, partition=partition, entity=EventEntity.SEGMENT)
    finished = S.COPY_SEGMENT_FINISHED.value
    return {e.segment_id: e.id for e in events if e.to_state == finished and e.segment_id}
