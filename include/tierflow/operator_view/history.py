"""Remote size and copy lag over time, replayed from the event history.

The store keeps no samples of the gauges, but every segment transition is in
``metadata_events`` with its time, so the figures can be rebuilt at each event:

* **remote size** (RemoteLogSizeBytes): the sizes of the segments that were
  COPY_SEGMENT_FINISHED or DELETE_SEGMENT_STARTED right after the event. This is exact.
* **copy lag** (RemoteCopyLagBytes): Kafka's rule (local segments above the highest remote
  offset, less the active one) applied to the partition's highest remote offset *at that time*
  and to the segments known today: the broker's current segments plus, below them, the remote
  rows of segments local retention has since removed. Segments written after an event are
  counted at that event too (the broker keeps no history of when each was rolled), so the line
  reads "how far behind today's log the remote tier was". At the last event it equals today's
  gauge.

The replay reads three columns per event and four per segment, never ORM objects.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from itertools import accumulate
from typing import NamedTuple

from sqlmodel import col, select

from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import MetadataEvent, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.metrics import copy_enabled
from tierflow.operator_view.model import HistoryPoint

_S = RemoteLogSegmentState
SIZE_STATES = frozenset({_S.COPY_SEGMENT_FINISHED.value, _S.DELETE_SEGMENT_STARTED.value})
MAX_POINTS = 500

PartitionKey = tuple[str, int]  # (topic id, partition)


class _Segment(NamedTuple):  # 10,000s of them: a tuple, not a dataclass
    key: PartitionKey
    start_offset: int
    end_offset: int
    size_bytes: int


class LagCurve:
    """A partition's copy lag as a function of its highest remote offset, in O(log n)."""

    def __init__(self, topic: Topic, segments: Sequence[tuple[int, int]]) -> None:
        """``segments``: (base offset, size) of the partition's segments, ascending."""
        self.copying = copy_enabled(topic)
        self.bases = [base for base, _size in segments]
        sizes = [size for _base, size in segments]
        # suffix[i]: bytes of segments i.. (those above a highest remote offset below bases[i])
        self.suffix = [*reversed(list(accumulate(reversed(sizes)))), 0]
        self.active = sizes[-1] if sizes else 0

    def at(self, highest_remote_offset: int) -> int:
        if not self.copying or not self.bases:
            return 0
        first_only_local = bisect_right(self.bases, highest_remote_offset)
        return max(self.suffix[first_only_local] - self.active, 0)


def known_segments(
    local: Sequence[tuple[int, int]], remote: Sequence[_Segment]
) -> list[tuple[int, int]]:
    """The broker's segments (base offset, size), and below its first one the remote rows of
    removed ones."""
    first_local = local[0][0] if local else None
    below: dict[int, int] = {}
    for row in remote:
        if first_local is None or row.start_offset < first_local:
            below.setdefault(row.start_offset, row.size_bytes)
    return sorted(below.items()) + list(local)


def remote_history(
    store: MetadataStore,
    topics: Sequence[Topic],
    local: Mapping[PartitionKey, Sequence[tuple[int, int]]],
    *,
    partition: int | None = None,
    max_points: int = MAX_POINTS,
) -> list[HistoryPoint]:
    """Totals over the topics' partitions (or one partition number) after each event time.

    ``local``: (base offset, size) of each partition's segments on its broker.
    """
    by_id = {t.topic_id: t for t in topics}
    if not by_id:
        return []
    segments = _segments(store, list(by_id), partition)
    by_partition: dict[PartitionKey, list[_Segment]] = {}
    for row in segments.values():
        by_partition.setdefault(row.key, []).append(row)
    curves = {
        key: LagCurve(by_id[key[0]], known_segments(sizes, by_partition.get(key, [])))
        for key, sizes in local.items()
        if key[0] in by_id and (partition is None or key[1] == partition)
    }
    lag = {key: curve.at(-1) for key, curve in curves.items()}
    highest: dict[PartitionKey, int] = {}
    states: dict[str, str] = {}
    size_total, lag_total = 0, sum(lag.values())
    points: list[HistoryPoint] = []
    for time_ms, segment_id, to_state in _segment_events(store, list(by_id), partition):
        row = segments.get(segment_id)
        if row is None:
            continue
        was_counted = states.get(segment_id) in SIZE_STATES
        states[segment_id] = to_state
        size_total += row.size_bytes * ((to_state in SIZE_STATES) - was_counted)
        finished = to_state == _S.COPY_SEGMENT_FINISHED.value
        if finished and row.end_offset > highest.get(row.key, -1):
            highest[row.key] = row.end_offset
            if (curve := curves.get(row.key)) is not None:
                new_lag = curve.at(row.end_offset)
                lag_total += new_lag - lag[row.key]
                lag[row.key] = new_lag
        point = HistoryPoint(time_ms, size_total, lag_total)
        if points and points[-1].time_ms == time_ms:
            points[-1] = point  # one point per instant: the state after all its events
        elif not points or _figures(points[-1]) != _figures(point):
            points.append(point)
    return downsample(points, max_points)


def _figures(point: HistoryPoint) -> tuple[int, int]:
    return point.remote_log_size_bytes, point.remote_copy_lag_bytes


def downsample(points: list[HistoryPoint], max_points: int) -> list[HistoryPoint]:
    """At most ``max_points``: the last point of each equal slice of time, plus the first."""
    if len(points) <= max_points or max_points < 2:
        return points
    first, last = points[0].time_ms, points[-1].time_ms
    slices = max_points - 1
    width = max((last - first) / slices, 1)
    kept: dict[int, HistoryPoint] = {}
    for point in points[1:]:  # in time order, so each slice keeps its last point
        kept[min(int((point.time_ms - first) // width), slices - 1)] = point
    return [points[0], *(kept[k] for k in sorted(kept))]


def _segments(
    store: MetadataStore, topic_ids: list[str], partition: int | None
) -> dict[str, _Segment]:
    seg = RemoteLogSegment
    query = select(
        col(seg.segment_id),
        col(seg.topic_id),
        col(seg.partition),
        col(seg.start_offset),
        col(seg.end_offset),
        col(seg.segment_size_bytes),
    ).where(col(seg.topic_id).in_(topic_ids))
    if partition is not None:
        query = query.where(col(seg.partition) == partition)
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    return {
        segment_id: _Segment((topic_id, int(part)), int(start), int(end), int(size))
        for segment_id, topic_id, part, start, end, size in rows
    }


def _segment_events(
    store: MetadataStore, topic_ids: list[str], partition: int | None
) -> list[tuple[int, str, str]]:
    event = MetadataEvent
    query = (
        select(col(event.event_timestamp_ms), col(event.segment_id), col(event.to_state))
        .where(
            col(event.entity) == EventEntity.SEGMENT.value,
            col(event.topic_id).in_(topic_ids),
        )
        # In time order: events of concurrent writers reach the table in another order than
        # their clocks stamped them (id, the insertion order, breaks ties).
        .order_by(col(event.event_timestamp_ms), col(event.id))
    )
    if partition is not None:
        query = query.where(col(event.partition) == partition)
    with store.engine.connect() as connection:
        return [(int(t), str(s), str(state)) for t, s, state in connection.execute(query).all()]
