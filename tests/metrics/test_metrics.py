"""Kafka's lag and size gauges, checked against figures worked out from the files."""

from __future__ import annotations

import pytest

from tests.support.scrub_finding import damage_and_scrub, heal, run_scrub
from tests.support.tiered import NOW_MS, Tiered
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metrics import (
    GAUGES,
    PartitionMetrics,
    aggregate_by_topic,
    compute_metrics,
    emit_metrics,
    emit_open_findings,
    open_findings_by_topic,
    publish_metrics,
)


def _by_key(metrics: list[PartitionMetrics]) -> dict[tuple[str, int], PartitionMetrics]:
    return {(m.topic, m.partition): m for m in metrics}


def _sizes(t: Tiered, topic: str, partition: int) -> list[int]:
    return [s.size_in_bytes() for s in t.log(topic, partition).segments()]


def test_copy_lag_size_and_count_per_partition(partly: Tiered) -> None:
    t = partly
    m = _by_key(compute_metrics(t.store, t.settings.log_dirs))
    assert sorted(m) == [("orders", 0), ("orders", 1), ("payments", 0)]

    # orders-0: segments at 0, 589, 1208 and the active 1779; only the first is remote.
    o0, sizes = m["orders", 0], _sizes(t, "orders", 0)
    assert [s.base_offset for s in t.log("orders", 0).segments()] == [0, 589, 1208, 1779]
    assert o0.highest_remote_offset == 588
    assert (o0.local_segments, o0.local_bytes) == (4, sum(sizes))
    assert (o0.remote_copy_lag_segments, o0.remote_copy_lag_bytes) == (2, sizes[1] + sizes[2])
    assert o0.remote[S.COPY_SEGMENT_FINISHED].segments == 1
    assert o0.remote_log_size_bytes == o0.remote[S.COPY_SEGMENT_FINISHED].bytes == sizes[0]
    assert o0.remote_log_metadata_count == 1
    assert (o0.remote_delete_lag_segments, o0.remote_delete_lag_bytes) == (0, 0)

    # orders-1: its high watermark (1455) is inside the segment at 1147, which must wait.
    o1, sizes = m["orders", 1], _sizes(t, "orders", 1)
    assert [s.base_offset for s in t.log("orders", 1).segments()] == [0, 585, 1147, 1728]
    assert o1.highest_remote_offset == 1146
    assert (o1.remote_copy_lag_segments, o1.remote_copy_lag_bytes) == (1, sizes[2])
    assert o1.remote_log_size_bytes == sizes[0] + sizes[1]
    assert o1.remote_log_metadata_count == 2

    # payments-0: two uploads in progress count as metadata, not as remote size or progress.
    p0, sizes = m["payments", 0], _sizes(t, "payments", 0)
    assert p0.highest_remote_offset == -1
    assert p0.remote[S.COPY_SEGMENT_STARTED].segments == 2
    assert p0.remote[S.COPY_SEGMENT_STARTED].bytes == sizes[0] + sizes[1]
    assert p0.remote_log_size_bytes == 0
    assert p0.remote_log_metadata_count == 2
    assert (p0.remote_copy_lag_segments, p0.remote_copy_lag_bytes) == (2, sizes[0] + sizes[1])
    assert (p0.tiered_state, p0.tiered_epoch) == ("ENABLED", 0)


def test_a_fully_tiered_partition_has_no_copy_lag(partly: Tiered) -> None:
    t = partly
    from tierflow.lifecycle.copy.steps import copy_partition

    copy_partition(t.log("orders", 0), t.store, t.rsm, owner="test")
    o0 = _by_key(compute_metrics(t.store, t.settings.log_dirs))["orders", 0]
    assert o0.highest_remote_offset == 1778
    assert (o0.remote_copy_lag_segments, o0.remote_copy_lag_bytes) == (0, 0)
    assert o0.remote_log_size_bytes == sum(_sizes(t, "orders", 0)[:3])


def test_copy_lag_is_zero_when_copying_is_disabled(partly: Tiered) -> None:
    t = partly
    orders = t.store.topic("orders")
    t.store.register_topic(
        "orders", orders.topic_id, actor="test", now_ms=NOW_MS, remote_log_copy_disable=True
    )
    o0 = _by_key(compute_metrics(t.store, t.settings.log_dirs))["orders", 0]
    assert (o0.remote_copy_lag_segments, o0.remote_copy_lag_bytes) == (0, 0)
    assert o0.remote_log_size_bytes > 0, "what is remote stays counted"


class FailingDeletes:
    """The real storage manager whose deletes fail: a delete stops in DELETE_SEGMENT_STARTED."""

    def __init__(self, rsm) -> None:
        self.rsm = rsm

    def delete_log_segment_data(self, segment) -> None:
        raise OSError(f"injected failure deleting {segment.describe()}")

    def __getattr__(self, name: str):
        return getattr(self.rsm, name)


def test_a_failed_delete_is_delete_lag_until_retried(partly: Tiered) -> None:
    t = partly
    orders = t.store.topic("orders")
    first, second = t.store.segments(orders.topic_id, 1, states=[S.COPY_SEGMENT_FINISHED])
    with pytest.raises(OSError, match="injected"):
        delete_remote_segment(
            t.store, FailingDeletes(t.rsm), orders, first, actor="test", now_ms=NOW_MS
        )

    o1 = _by_key(compute_metrics(t.store, t.settings.log_dirs))["orders", 1]
    assert (o1.remote_delete_lag_segments, o1.remote_delete_lag_bytes) == (
        1,
        first.segment_size_bytes,
    )
    # Newer trunk's RemoteLogSizeBytes still counts it: the data is still there.
    assert o1.remote_log_size_bytes == first.segment_size_bytes + second.segment_size_bytes
    assert o1.remote_log_metadata_count == 2

    delete_remote_segment(
        t.store, t.rsm, orders, t.store.segment(first.segment_id), actor="test", now_ms=NOW_MS
    )
    o1 = _by_key(compute_metrics(t.store, t.settings.log_dirs))["orders", 1]
    assert (o1.remote_delete_lag_segments, o1.remote_delete_lag_bytes) == (0, 0)
    assert o1.remote_log_size_bytes == second.segment_size_bytes
    assert o1.remote_log_metadata_count == 1
    assert o1.remote[S.DELETE_SEGMENT_FINISHED].segments == 1
    assert o1.highest_remote_offset == 1146, "Kafka's highest remote offset never goes back"


def test_topic_totals_are_the_sum_of_partitions(partly: Tiered) -> None:
    metrics = compute_metrics(partly.store, partly.settings.log_dirs)
    orders = next(t for t in aggregate_by_topic(metrics) if t.topic == "orders")
    parts = [m for m in metrics if m.topic == "orders"]
    assert orders.partitions == 2
    for name in GAUGES:
        assert getattr(orders, name) == sum(getattr(m, name) for m in parts)
    assert orders.local_bytes == sum(m.local_bytes or 0 for m in parts)


def test_filters_and_partitions_missing_from_the_log_dirs(partly: Tiered, tmp_path) -> None:
    t = partly
    only = compute_metrics(t.store, t.settings.log_dirs, topic="orders", partition=1)
    assert [(m.topic, m.partition) for m in only] == [("orders", 1)]
    elsewhere = _by_key(compute_metrics(t.store, [tmp_path / "no-such-dir"]))
    o1 = elsewhere["orders", 1]
    assert (o1.local_segments, o1.local_bytes, o1.remote_copy_lag_bytes) == (None, None, None)
    assert o1.remote_log_size_bytes > 0


def test_the_remote_figures_come_from_one_grouped_query(partly: Tiered) -> None:
    from sqlalchemy import event

    statements: list[str] = []

    def record(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    event.listen(partly.store.engine, "before_cursor_execute", record)
    try:
        compute_metrics(partly.store, partly.settings.log_dirs)
    finally:
        event.remove(partly.store.engine, "before_cursor_execute", record)
    on_segments = [s for s in statements if "remote_log_segments" in s]
    assert len(on_segments) == 1 and "GROUP BY" in on_segments[0]


def test_emit_sends_partition_topic_and_total_gauges(partly: Tiered) -> None:
    metrics = compute_metrics(partly.store, partly.settings.log_dirs)
    received: list[tuple[str, float, dict]] = []
    sent = emit_metrics(
        metrics, gauge=lambda name, value, tags: received.append((name, value, tags))
    )
    assert [(n, v) for n, v, _ in received] == sent
    values = dict(sent)
    o0 = _by_key(metrics)["orders", 0]
    assert values["tierflow.remote_copy_lag_bytes.orders.0"] == o0.remote_copy_lag_bytes
    assert values["tierflow.remote_log_size_bytes.orders"] == sum(
        m.remote_log_size_bytes for m in metrics if m.topic == "orders"
    )
    assert values["tierflow.remote_log_metadata_count"] == sum(
        m.remote_log_metadata_count for m in metrics
    )
    tags = next(tags for name, _, tags in received if name.endswith("copy_lag_bytes.orders.0"))
    assert tags == {"topic": "orders", "partition": "0"}
    assert len(sent) == len(GAUGES) * (3 + 2 + 1)


def test_emit_goes_through_airflow_stats(partly: Tiered) -> None:
    pytest.importorskip("airflow.sdk.observability.stats")
    metrics = compute_metrics(partly.store, partly.settings.log_dirs)
    assert len(emit_metrics(metrics)) == len(GAUGES) * 6


OPEN = "tierflow.scrub_open_findings"


def _open_findings(t: Tiered) -> dict[str, float]:
    return dict(emit_open_findings(open_findings_by_topic(t.store), gauge=lambda *_a, **_k: None))


def test_open_scrub_findings_are_a_gauge_per_topic_and_in_total(partly: Tiered) -> None:
    """A real finding (a byte flipped in the bucket, found by a scrub) counts on its topic;
    once a later check passes the gauge is sent as 0 again, not left out."""
    t = partly
    zeros = {f"{OPEN}.orders": 0, f"{OPEN}.payments": 0, OPEN: 0}
    assert _open_findings(t) == zeros
    damaged = damage_and_scrub(t, "orders", 1)
    received: list[tuple[str, float, dict]] = []
    sent = emit_open_findings(
        open_findings_by_topic(t.store),
        gauge=lambda name, value, tags: received.append((name, value, tags)),
    )
    assert [(n, v) for n, v, _ in received] == sent
    assert dict(sent) == {**zeros, f"{OPEN}.orders": 1, OPEN: 1}
    assert {name: tags for name, _, tags in received}[f"{OPEN}.orders"] == {"topic": "orders"}
    heal(damaged)
    assert run_scrub(t, start_ms=NOW_MS + 60_000).findings == []
    assert _open_findings(t) == zeros


def test_the_dags_task_sends_the_open_findings_gauge(partly: Tiered) -> None:
    damage_and_scrub(partly, "orders", 1)
    assert publish_metrics(partly.settings)["scrub_open_findings"] == 1
