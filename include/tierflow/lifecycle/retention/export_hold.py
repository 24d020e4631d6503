"""Remote retention waits for the Iceberg export: a segment of a topic exported with
``tierflow.iceberg.export=true`` is not expired by retention.ms or retention.bytes while it
holds offsets not yet committed to the topic's table, so the table never misses a record
retention took first.

``tierflow.iceberg.retention.wait.max.ms`` bounds the wait: counted from the moment the segment
passed retention.ms (its max timestamp + retention.ms; its max timestamp when retention.ms is
unlimited), past it the segment expires, exported or not. -1 (the default) waits as long as
it takes. The segments after the first held one wait too, so the log start offset only ever
moves over a prefix of the log, as Kafka's does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tierflow.lifecycle.retention.remote_plan import (
    MOVES_LOG_START,
    RemoteRetentionPlan,
    SegmentRow,
)
from tierflow.metadata.models import Topic

WAITING = "waiting for the Iceberg export"


def hold_for_export(
    plan: RemoteRetentionPlan, topic: Topic, exported_offset: int, rows: Sequence[SegmentRow]
) -> RemoteRetentionPlan:
    """The plan without the retention deletions the export still needs."""
    if not topic.iceberg_export:
        return plan
    max_timestamps = {row.segment_id: row.max_timestamp_ms for row in rows}
    held = [
        d
        for d in plan.deletions
        if d.reason in MOVES_LOG_START
        and d.end_offset > exported_offset
        and still_waiting(topic, max_timestamps[d.segment_id], plan.now_ms)
    ]
    if not held:
        return plan
    first = min(d.start_offset for d in held)
    kept = [d for d in plan.deletions if d.reason not in MOVES_LOG_START or d.start_offset < first]
    new_start = plan.new_log_start_offset
    if new_start is not None:
        new_start = min(new_start, first) if min(new_start, first) > plan.log_start_offset else None
    stopped = f"segment {held[0].segment_id}: {WAITING} (exported to {exported_offset})"
    return replace(plan, deletions=kept, new_log_start_offset=new_start, stopped_at=stopped)


def still_waiting(topic: Topic, max_timestamp_ms: int, now_ms: int) -> bool:
    wait_max = topic.iceberg_retention_wait_max_ms
    if wait_max < 0:
        return True
    due = max_timestamp_ms + max(topic.retention_ms, 0)
    return now_ms - due <= wait_max
