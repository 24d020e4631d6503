"""The lifecycle through the library on a cloud bucket, shared by the S3, GCS and Azure tests."""

from __future__ import annotations

from collections.abc import Callable

from tests.retention.support import ACTOR, configure, copy_all, rows
from tests.support.tiered import NOW_MS, Tiered, eligible
from tierflow.kafka.record_batch import iter_batches
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.lifecycle.retention.remote import (
    RetentionReason,
    execute_remote_retention,
    plan_partition_retention,
)
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.read.fetch import FetchRequest, fetch_remote


def finished_keys(t: Tiered) -> set[str]:
    """Every object key the metadata says a COPY_SEGMENT_FINISHED segment has."""
    keys = set()
    for log_ in t.logs():
        for row in rows(t, log_.topic, log_.partition, S.COPY_SEGMENT_FINISHED):
            keys |= {o.key for o in t.store.segment_objects(row.segment_id)}
    return keys


def check_lifecycle(t: Tiered, stored: Callable[[], set[str]]) -> None:
    """Copy, verify, fetch and expire through ``t``'s bucket, whose URL has the prefix
    ``cluster-a``; ``stored`` lists the bucket's raw names behind the store's back."""
    copy_all(t)
    for log_ in t.logs():
        assert [(r.start_offset, r.end_offset) for r in rows(t, log_.topic, log_.partition)] == (
            eligible(log_)
        )
        checks = verify_partition(log_, t.store.topic(log_.topic), t.store, t.rsm)
        assert checks and all(check.identical for check in checks), checks

    # The bucket holds exactly the objects of the finished segments, under the URL's prefix.
    keys = finished_keys(t)
    assert set(t.rsm.objects.list()) == keys
    assert stored() == {f"cluster-a/{k}" for k in keys}

    # A batch from the middle of the second remote segment, byte for byte.
    segment = t.log("orders", 0).segments()[1]
    batch = list(iter_batches(segment.log_path))[2]
    fetched = fetch_remote(
        t.store, t.rsm, FetchRequest("orders", 0, offset=batch.base_offset, max_bytes=1)
    )
    local = segment.log_path.read_bytes()[batch.position : batch.end_position]
    assert fetched.batches == [local]
    assert fetched.segments_read == [rows(t, "orders", 0)[1].segment_id]

    finished = rows(t, "orders", 0, S.COPY_SEGMENT_FINISHED)
    ages = [NOW_MS - r.max_timestamp_ms for r in finished]
    configure(t, "orders", retention_ms=(ages[0] + ages[1]) // 2)  # only the oldest expires
    topic = t.store.topic("orders")
    plan = plan_partition_retention(
        t.store, topic, t.store.partition(topic.topic_id, 0), now_ms=NOW_MS, log_=t.log("orders", 0)
    )
    assert [(d.segment_id, d.reason) for d in plan.deletions] == [
        (finished[0].segment_id, RetentionReason.RETENTION_MS)
    ]
    report = execute_remote_retention(plan, t.store, t.rsm, actor=ACTOR, clock=lambda: NOW_MS)
    assert report.errors == []
    assert t.store.segment(finished[0].segment_id).state == S.DELETE_SEGMENT_FINISHED
    expired = {o.key for o in t.store.segment_objects(finished[0].segment_id)}
    assert expired and not expired & set(t.rsm.objects.list())
    assert set(t.rsm.objects.list()) == finished_keys(t) == keys - expired
