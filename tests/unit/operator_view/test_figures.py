"""The snapshot's figures against the store and the log dirs, recomputed the plain way."""

from __future__ import annotations

from tests.operator_view.conftest import ViewData
from tests.operator_view.expected import expected_partitions, expected_topics
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.operator_view.model import PartitionView
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.snapshot import build_snapshot

PARTITION_FIGURES = (
    "local_bytes",
    "local_segments",
    "remote_log_size_bytes",
    "remote_log_metadata_count",
    "remote_copy_lag_bytes",
    "remote_copy_lag_segments",
    "remote_delete_lag_bytes",
    "remote_delete_lag_segments",
    "highest_remote_offset",
    "log_start_offset",
    "local_log_start_offset",
)
TOPIC_FIGURES = PARTITION_FIGURES[:8]


def snapshot(d: ViewData, **options: object):
    return build_snapshot(d.t.store, d.t.settings, now_ms=d.now_ms, options=ViewOptions(**options))


def listed(d: ViewData) -> dict[tuple[str, int], PartitionView]:
    """Every partition, as each topic's view lists them (one page holds them all here)."""
    return {
        (m.topic, m.partition): m
        for name in ("orders", "payments")
        for m in snapshot(d, topic=name).partitions
    }


def test_partition_figures_match_the_store_and_the_files(view_data: ViewData) -> None:
    d = view_data
    expected = expected_partitions(d.t.store, d.t.settings.log_dirs[0])
    shown = listed(d)
    assert set(shown) == set(expected) == {("orders", 0), ("orders", 1), ("payments", 0)}
    for key, m in shown.items():
        for name in PARTITION_FIGURES:
            assert getattr(m, name) == getattr(expected[key], name), (key, name)
        assert {s: t.segments for s, t in m.remote.items() if t.segments} == expected[key].states
        assert m.broker == 0  # the one broker, from its log dir's meta.properties


def test_the_scenario_has_something_in_every_column(view_data: ViewData) -> None:
    shown = listed(view_data)
    assert shown[("orders", 0)].remote_delete_lag_segments == 1
    assert shown[("orders", 1)].remote_copy_lag_segments > 0
    assert shown[("payments", 0)].remote[S.COPY_SEGMENT_STARTED].segments == 2


def test_topic_figures_are_the_partitions_summed_with_the_topics_settings(
    view_data: ViewData,
) -> None:
    d, store = view_data, view_data.t.store
    snap = snapshot(d)
    expected = expected_topics(store, d.t.settings.log_dirs[0])
    assert [t.topic for t in snap.topics] == ["orders", "payments"]
    for view in snap.topics:
        for name in TOPIC_FIGURES:
            assert getattr(view, name) == getattr(expected[view.topic], name), (view.topic, name)
        assert {s: t.segments for s, t in view.remote.items() if t.segments} == (
            expected[view.topic].states
        )
        row = store.topic(view.topic)
        assert view.partitions == len(store.partitions(row.topic_id))
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
