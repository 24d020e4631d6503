"""What the next scheduled retention run would delete: its dry-run plan, computed now.

The same partitions (``retention_targets``), the same planners in the same order (local, then
remote) and the same "now" the run will use: its data interval end, the next 02:00 UTC of
``retention_expiry``'s schedule. Nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta

from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.retention.local import LocalRetentionPlan, plan_local_retention
from tierflow.lifecycle.retention.remote import (
    RemoteRetentionPlan,
    plan_partition_retention,
    remote_retention_applies,
)
from tierflow.metadata.models import Partition, Topic
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
    partitions: Sequence[tuple[str, int]] | None = None,
) -> RetentionPreview:
    """Plan, as of ``as_of_ms``, the partitions the run would expire: of ``partitions`` (topic
    name, number) when given, else all of them (``retention_targets``).

    Each partition costs the run's own planning (a few queries and file reads), so the page
    plans only the partitions it shows. ``logs``: the broker's partitions by (topic name,
    partition); a partition not on this disk is planned from the store alone, as the run does.
    """
    preview = RetentionPreview(as_of_ms=as_of_ms, delete_local_files=delete_local_files)
    per_topic: dict[str, TopicRetention] = {}
    targets = _targets(store, partitions) if partitions is not None else _all_targets(store)
    for topic, row in targets:
        log_ = logs.get((topic.name, row.partition))
        local = plan_local_retention(log_, store, topic, now_ms=as_of_ms) if log_ else None
        remote = plan_partition_retention(
            store, topic, row, now_ms=as_of_ms, log_=log_, copy_grace_ms=copy_grace_ms
        )
        entry = _partition_entry(topic.name, row.partition, local, remote)
        preview.partitions.append(entry)
        preview.deletions.extend(_deletions(topic.name, row.partition, local, remote))
        totals = per_topic.setdefault(topic.name, TopicRetention(topic.name))
        totals.remote_segments += entry.remote_segments
        totals.remote_bytes += entry.remote_bytes
        totals.local_segments += entry.local_segments
        totals.local_bytes += entry.local_bytes
    preview.topics = [per_topic[name] for name in sorted(per_topic)]
    return preview


def _all_targets(store: MetadataStore) -> Iterator[tuple[Topic, Partition]]:
    for target in retention_targets(store):
        topic = store.topic(target["topic"])
        row = store.partition(topic.topic_id, int(target["partition"]))
        if row is not None:
            yield topic, row


def _targets(
    store: MetadataStore, partitions: Sequence[tuple[str, int]]
) -> Iterator[tuple[Topic, Partition]]:
    """Those of ``partitions`` that ``retention_targets`` would list, without listing them all
    (it reads every partition of every topic): a topic remote retention applies to, a
    partition in the store, not handed to remote partition removal."""
    topics: dict[str, Topic] = {}
    for name, number in partitions:
        topic = topics.get(name) or topics.setdefault(name, store.topic(name))
        if not remote_retention_applies(topic):
            continue
        row = store.partition(topic.topic_id, number)
        if row is not None and store.partition_delete(topic.topic_id, number) is None:
            yield topic, row


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
