"""Remote retention waits for the Iceberg export: retention.ms expires every segment of
orders-0, but those holding offsets not yet committed to the topic's table (and all after
them) wait; tierflow.iceberg.retention.wait.max.ms bounds the wait; a topic not exported does
not wait."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.retention.support import HOUR_MS, configure, copy_all, rows
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.lifecycle.retention.export_hold import WAITING
from tierflow.lifecycle.retention.remote import plan_partition_retention
from tierflow.metadata.states import RemoteLogSegmentState as S

LATER = NOW_MS + 48 * HOUR_MS  # every segment is past retention.ms by then


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path)
    copy_all(t)
    configure(t, "orders", retention_ms=HOUR_MS, iceberg_export=True)
    return t


def plan(t: Tiered, now_ms: int = LATER):
    topic = t.store.topic("orders")
    partition = t.store.partition(topic.topic_id, 0)
    return plan_partition_retention(t.store, topic, partition, now_ms=now_ms)


def test_retention_waits_for_offsets_not_exported(tiered: Tiered) -> None:
    segments = rows(tiered, "orders", 0, S.COPY_SEGMENT_FINISHED)
    assert len(segments) >= 3
    nothing = plan(tiered)
    assert nothing.deletions == [] and nothing.new_log_start_offset is None
    assert WAITING in nothing.stopped_at
    topic_id = tiered.store.topic("orders").topic_id
    tiered.store.record_iceberg_export(topic_id, {0: segments[1].end_offset})
    some = plan(tiered)
    assert [d.segment_id for d in some.deletions] == [s.segment_id for s in segments[:2]]
    assert some.new_log_start_offset == segments[2].start_offset
    tiered.store.record_iceberg_export(topic_id, {0: segments[0].end_offset})  # never back
    assert tiered.store.partition(topic_id, 0).iceberg_exported_offset == segments[1].end_offset


def test_the_wait_is_bounded_and_only_exported_topics_wait(tiered: Tiered) -> None:
    segments = rows(tiered, "orders", 0, S.COPY_SEGMENT_FINISHED)
    configure(tiered, "orders", iceberg_retention_wait_max_ms=HOUR_MS)
    assert len(plan(tiered).deletions) == len(segments), "waited longer than an hour"
    just_due = segments[0].max_timestamp_ms + HOUR_MS + 1  # past retention.ms by 1 ms
    assert plan(tiered, just_due).deletions == [], "within the bound: it waits"
    configure(tiered, "orders", iceberg_export=False, iceberg_retention_wait_max_ms=-1)
    assert len(plan(tiered).deletions) == len(segments)
