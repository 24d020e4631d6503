"""The snapshot's figures against the store and the log dirs, recomputed here the plain way."""

from __future__ import annotations

from collections import Counter, defaultdict

from tests.operator_view.conftest import ViewData
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.snapshot import build_snapshot

SIZE_STATES = {S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED}
LIVE_STATES = {S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED}


def snapshot(d: ViewData, **options: object):
    return build_snapshot(d.t.store, d.t.settings, now_ms=d.now_ms, options=ViewOptions(**options))


def local_files(d: ViewData) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(base offset, .log size) of every segment file, read from the directory itself."""
    found: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for directory in sorted(d.t.settings.log_dirs[0].iterdir()):
        if not directory.is_dir() or "-" not in directory.name:
            continue
        topic, partition = directory.name.rsplit("-", 1)
        logs = sorted(directory.glob("*.log"))
        found[(topic, int(partition))] = [(int(p.stem), p.stat().st_size) for p in logs]
    return found


def test_partition_figures_match_the_store_and_the_files(view_data: ViewData) -> None:
    d, store = view_data, view_data.t.store
    files = local_files(d)
    shown = {(m.topic, m.partition): m for m in snapshot(d).partitions}
    assert set(shown) == {("orders", 0), ("orders", 1), ("payments", 0)}
    for (topic, number), m in shown.items():
        topic_row = store.topic(topic)
        row = store.partition(topic_row.topic_id, number)
        segments = store.segments(topic_row.topic_id, number)
        assert m.local_bytes == sum(size for _, size in files[(topic, number)])
        assert m.local_segments == len(files[(topic, number)])
        assert (m.highest_remote_offset, m.log_start_offset, m.local_log_start_offset) == (
            row.highest_remote_offset,
            row.log_start_offset,
            row.local_log_start_offset,
        )
        assert m.remote_log_size_bytes == sum(
            s.segment_size_bytes for s in segments if s.state in SIZE_STATES
        )
        assert m.remote_log_metadata_count == sum(1 for s in segments if s.state in LIVE_STATES)
        deleting = [s for s in segments if s.state == S.DELETE_SEGMENT_STARTED]
        assert (m.remote_delete_lag_bytes, m.remote_delete_lag_segments) == (
            sum(s.segment_size_bytes for s in deleting),
            len(deleting),
        )
        only_local = [
            size for base, size in files[(topic, number)] if base > row.highest_remote_offset
        ]
        active = files[(topic, number)][-1][1]
        assert m.remote_copy_lag_bytes == max(sum(only_local) - active, 0)
        assert m.remote_copy_lag_segments == max(len(only_local) - 1, 0)


def test_the_scenario_has_something_in_every_column(view_data: ViewData) -> None:
    shown = {(m.topic, m.partition): m for m in snapshot(view_data).partitions}
    assert shown[("orders", 0)].remote_delete_lag_segments == 1
    assert shown[("orders", 1)].remote_copy_lag_segments > 0
    assert shown[("payments", 0)].remote[S.COPY_SEGMENT_STARTED].segments == 2


def test_topic_figures_are_the_partitions_summed_with_the_topics_settings(
    view_data: ViewData,
) -> None:
    d, store = view_data, view_data.t.store
    snap = snapshot(d)
    per_topic: dict[str, Counter] = defaultdict(Counter)
    for m in snap.partitions:
        per_topic[m.topic].update(
            local_bytes=m.local_bytes,
            remote_log_size_bytes=m.remote_log_size_bytes,
            copy_lag=m.remote_copy_lag_bytes,
            partitions=1,
        )
    assert [t.topic for t in snap.topics] == ["orders", "payments"]
    for view in snap.topics:
        row = store.topic(view.topic)
        states = Counter(
            s.state
            for p in store.partitions(row.topic_id)
            for s in store.segments(row.topic_id, p.partition)
        )
        assert {state: totals.segments for state, totals in view.remote.items()} == {
            state.value: states.get(state.value, 0) for state in S
        }
        sums = per_topic[view.topic]
        assert (view.partitions, view.local_bytes, view.remote_log_size_bytes) == (
            sums["partitions"],
            sums["local_bytes"],
            sums["remote_log_size_bytes"],
        )
        assert view.remote_copy_lag_bytes == sums["copy_lag"]
        assert (view.tiered_state, view.tiered_epoch) == (row.tiered_state, row.tiered_epoch)
        assert (view.retention_ms, view.retention_bytes) == (row.retention_ms, row.retention_bytes)
        assert (view.local_retention_ms, view.local_retention_bytes) == (-2, -2)
        assert (view.effective_local_retention_ms, view.effective_local_retention_bytes) == (
            row.retention_ms,
            row.retention_bytes,
        )
    orders = next(v for v in snap.topics if v.topic == "orders")
    assert orders.remote[S.DELETE_SEGMENT_FINISHED].segments == 1


def test_a_topic_filter_narrows_every_section(view_data: ViewData) -> None:
    snap = snapshot(view_data, topic="payments", stuck_after_s=60)
    assert {m.topic for m in snap.partitions} == {"payments"}
    assert [t.topic for t in snap.topics] == ["payments"]
    assert {s.topic for s in snap.stuck} == {"payments"}
    assert {e.topic for e in snap.events} == {"payments"}
    assert {p.topic for p in snap.retention.partitions} == {"payments"}


def test_latest_events_are_the_newest_first(view_data: ViewData) -> None:
    store = view_data.t.store
    snap = snapshot(view_data, events=5)
    newest = list(reversed(store.events()))[:5]
    assert [e.id for e in snap.events] == [e.id for e in newest]
    assert [e.actor for e in snap.events] == [e.actor for e in newest]
    assert snap.events[0].task_instance is not None  # the stuck copy's prepare
