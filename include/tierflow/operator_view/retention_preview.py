"""What the next scheduled retention run would delete: its dry-run plan, computed now.

The same partitions (``retention_targets``), the same planners in the same order (local, then
remote) and the same "now" the run will use: its data interval end, the next 02:00 UTC of
``retention_expiry``'s schedule. Nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.local_retention import LocalRetentionPlan, plan_local_retention
from tierflow.lifecycle.retention import RemoteRetentionPlan, plan_partition_retention
from tierflow.metadata.store import MetadataStore
from tierflow.operator_view.model import (
    PartitionRetention,
    PlannedDeletion,
    RetentionPreview,
    TopicRetention,
)
from tierflow.tasks.retention import retention_targets

# dags/retention_expiry.py runs at "0 2 * * *" (tests check the two agree).
RETENTION_SCHEDULE = "0 2 * * *"
RETENTION_HOUR_UTC = 2


def next_retention_run_ms(now_ms: int) -> int:
    """The next 02:00 UTC strictly after ``now_ms``: the "now" of the next scheduled run."""
    now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    run = now.replace(hour=RETENTION_HOUR_UTC, minute=0, second=0, microsecond=0)
    if run <= now:
        run += timedelta(days=1)
    return int(run.timestamp() * 1000)


def preview_retention(
    store: MetadataStore,
    logs: Mapping[tuple[str, int], PartitionLog],
    *,
    as_of_ms: int,
    copy_grace_ms: int,
    delete_local_files: bool,
    topics: set[str] | None = None,
    partition: int | None = None,
) -> RetentionPreview:
    """Plan every partition the run would expire, as of ``as_of_ms``.

    ``logs``: the broker's partitions by (topic name, partition); a partition not on this disk
    is planned from the store alone, as the run does.
    """
    preview = RetentionPreview(as_of_ms=as_of_ms, delete_local_files=delete_local_files)
    per_topic: dict[str, TopicRetention] = {}
    for target in retention_targets(store):
        name, number = target["topic"], int(target["partition"])
        if (topics is not None and name not in topics) or (
            partition is not None and number != partition
        ):
            continue
        topic = store.topic(name)
        row = store.partition(topic.topic_id, number)
        if row is None:
            continue
        log_ = logs.get((name, number))
        local = plan_local_retention(log_, store, topic, now_ms=as_of_ms) if log_ else None
        remote = plan_partition_retention(
            store, topic, row, now_ms=as_of_ms, log_=log_, copy_grace_ms=copy_grace_ms
        )
        entry = _partition_entry(name, number, local, remote)
        preview.partitions.append(entry)
        preview.deletions.extend(_deletions(name, number, local, remote))
        totals = per_topic.setdefault(name, TopicRetention(name))
        totals.remote_segments += entry.remote_segments
        totals.remote_bytes += entry.remote_bytes
        totals.local_segments += entry.local_segments
        totals.local_bytes += entry.local_bytes
    preview.topics = [per_topic[name] for name in sorted(per_topic)]
    return preview


def _partition_entry(
    topic: str, partition: int, local: LocalRetentionPlan | None, remote: RemoteRetentionPlan
) -> PartitionRetention:
    entry = PartitionRetention(
        topic,
        partition,
        remote_segments=len(remote.deletions),
        remote_bytes=remote.total_bytes,
        new_log_start_offset=remote.new_log_start_offset,
        stopped_at=remote.stopped_at,
    )
    if local is not None:
        entry.local_segments = len(local.deletions)
        entry.local_bytes = local.total_bytes
        entry.new_local_log_start_offset = local.new_local_log_start_offset
        entry.blocked = list(local.blocked)
        entry.local_skipped = local.skipped
    return entry


def _deletions(
    topic: str, partition: int, local: LocalRetentionPlan | None, remote: RemoteRetentionPlan
) -> list[PlannedDeletion]:
    found = [
        PlannedDeletion(
            "remote",
            topic,
            partition,
            d.segment_id,
            d.start_offset,
            d.end_offset,
            d.size_bytes,
            d.reason.value,
        )
        for d in remote.deletions
    ]
    for d in local.deletions if local else []:
        found.append(
            PlannedDeletion(
                "local",
                topic,
                partition,
                str(d.base_offset),
                d.base_offset,
                d.next_offset - 1,
                d.size_bytes,
                d.reason,
            )
        )
    return found
