"""The chart's series, replayed from the event history."""

from __future__ import annotations

from itertools import pairwise

import pytest
from sqlmodel import Session, select

from tests.operator_view.conftest import ViewData
from tierflow.metadata.models import MetadataEvent
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import TieredState
from tierflow.metrics import copy_lag
from tierflow.operator_view.history import LagCurve, downsample
from tierflow.operator_view.model import HistoryPoint
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.snapshot import build_snapshot


def history(d: ViewData, **options: object) -> list[HistoryPoint]:
    snap = build_snapshot(d.t.store, d.t.settings, now_ms=d.now_ms, options=ViewOptions(**options))
    assert snap.history is not None
    return snap.history


def test_the_last_replayed_point_equals_todays_gauges(view_data: ViewData) -> None:
    d = view_data
    snap = build_snapshot(d.t.store, d.t.settings, now_ms=d.now_ms, options=ViewOptions())
    *replayed, now = snap.history or []
    remote = sum(t.remote_log_size_bytes for t in snap.topics)
    lag = sum(t.remote_copy_lag_bytes for t in snap.topics)
    assert now == HistoryPoint(d.now_ms, remote, lag)
    assert (replayed[-1].remote_log_size_bytes, replayed[-1].remote_copy_lag_bytes) == (remote, lag)
    assert replayed[-1].time_ms < d.now_ms


def test_remote_size_follows_each_transition(view_data: ViewData) -> None:
    d, store = view_data, view_data.t.store
    points = {p.time_ms: p for p in history(d)}
    sizes = {}
    running = 0
    for event in store.events(entity="segment"):
        size = store.segment(event.segment_id).segment_size_bytes
        if event.to_state == S.COPY_SEGMENT_FINISHED:
            running += size
        elif event.to_state == S.DELETE_SEGMENT_FINISHED:
            running -= size  # DELETE_SEGMENT_STARTED still counts (RemoteLogSizeBytes)
        sizes[event.event_timestamp_ms] = running
    for time_ms, point in points.items():
        if time_ms in sizes:
            assert point.remote_log_size_bytes == sizes[time_ms], time_ms
    # Each change of size shows up as a point of its own.
    times = list(sizes)
    changed = {b for a, b in pairwise(times) if sizes[a] != sizes[b]}
    assert changed <= set(points)


def test_copy_lag_before_any_copy_is_every_partitions_whole_log(view_data: ViewData) -> None:
    d = view_data
    first = history(d)[0]
    expected = 0
    for log_ in d.t.logs():
        sizes = [s.size_in_bytes() for s in log_.segments()]
        expected += sum(sizes) - sizes[-1]
    assert first.remote_log_size_bytes == 0
    assert first.remote_copy_lag_bytes == expected


def test_one_partition_only(view_data: ViewData) -> None:
    points = history(view_data, topic="orders", partition=1)
    snap = build_snapshot(
        view_data.t.store,
        view_data.t.settings,
        now_ms=view_data.now_ms,
        options=ViewOptions(topic="orders", partition=1),
    )
    (m,) = snap.partitions
    assert points[-1].remote_copy_lag_bytes == m.remote_copy_lag_bytes
    assert points[-1].remote_log_size_bytes == m.remote_log_size_bytes


@pytest.mark.parametrize("state", [TieredState.ENABLED, TieredState.DISABLED])
def test_lag_curve_is_kafkas_copy_lag_at_every_highest_offset(view_data: ViewData, state) -> None:
    topic = view_data.t.store.topic("orders")  # a detached row: changing it writes nothing
    topic.tiered_state = state.value
    log_ = view_data.t.log("orders", 0)
    bases = [s.base_offset for s in log_.segments()]
    sizes = [s.size_in_bytes() for s in log_.segments()]
    curve = LagCurve(topic, list(zip(bases, sizes, strict=True)))
    for highest in sorted({-1, *bases, *(b - 1 for b in bases), *(b + 1 for b in bases), 10**9}):
        assert curve.at(highest) == copy_lag(topic, bases, sizes, highest)[0], highest


def test_downsampling_keeps_the_first_and_last_points() -> None:
    points = [HistoryPoint(t, t, 0) for t in range(0, 10_000, 7)]
    kept = downsample(points, 50)
    assert len(kept) <= 50
    assert kept[0] == points[0] and kept[-1] == points[-1]
    assert [p.time_ms for p in kept] == sorted(p.time_ms for p in kept)
    assert downsample(points[:10], 50) == points[:10]


def test_events_stamped_out_of_insertion_order_replay_in_time_order(view_data: ViewData) -> None:
    """Two writers: the later insert carries the earlier clock. Each point is the size after
    every event stamped up to its time, and the points run forward in time."""
    d, store = view_data, view_data.t.store
    with Session(store.engine) as session:
        events = session.exec(
            select(MetadataEvent)
            .where(MetadataEvent.entity == "segment")
            .order_by(MetadataEvent.id)  # type: ignore[arg-type]
        ).all()
        finished = [e for e in events if e.to_state == S.COPY_SEGMENT_FINISHED]
        first, last = finished[0], finished[-1]
        last.event_timestamp_ms = first.event_timestamp_ms - 1  # inserted last, stamped first
        session.add(last)
        session.commit()
    points = history(d)[:-1]  # the last is today's gauges
    assert [p.time_ms for p in points] == sorted({p.time_ms for p in points})
    replayed = sorted(store.events(entity="segment"), key=lambda e: (e.event_timestamp_ms, e.id))
    for point in points:
        up_to = [e for e in replayed if e.event_timestamp_ms <= point.time_ms]
        states = {e.segment_id: e.to_state for e in up_to}
        size = sum(
            store.segment(s).segment_size_bytes
            for s, state in states.items()
            if state in (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)
        )
        assert point.remote_log_size_bytes == size, point
