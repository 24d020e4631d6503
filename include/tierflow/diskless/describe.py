"""What ``tierflow diskless describe`` shows: KIP-1163's kafka-diskless-metadata.sh.

Per diskless topic:

- its partitions' offsets: log start, the highest offset in tiered segments, the WAL start
  (``diskless_start_offset``) and the high watermark;
- its size on object storage: the bytes of its live batches in WAL objects (and, beside it,
  the bytes of its tiered segments);
- the total size of the WAL objects that hold the topic (any of its live batches);
- the total size of those of them that also hold deleted batches: objects kept alive by this
  topic while part of them is garbage, and how many deleted bytes they hold.

The coordinator keeps no record of a batch once it is deleted, so an object none of whose
batches is live any more cannot be attributed to a topic: such objects are DELETING, waiting
for the collector, and are counted once for all topics (``awaiting_deletion``).

Per object: key, state, total size, used size, live batches and the topics they belong to.
All figures come from one aggregate query over the batch rows, not from listing the bucket.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field

from sqlalchemy import func
from sqlmodel import col, select

from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.merge import mergeable
from tierflow.diskless.models import DisklessBatch, WalObject, WalObjectState
from tierflow.diskless.wal_object import HEADER_SIZE
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore


@dataclass(frozen=True)
class PartitionOffsets:
    partition: int
    log_start_offset: int
    tiered_end_offset: int  # highest offset in a COPY_SEGMENT_FINISHED segment, -1 if none
    wal_start_offset: int  # the first offset still in WAL objects
    high_watermark: int
    wal_bytes: int


@dataclass
class TopicOverview:
    topic: str
    topic_id: str
    timestamp_type: str
    merged_into_tiered_storage: bool  # a consolidated diskless topic (remote.storage.enable)
    partitions: list[PartitionOffsets] = field(default_factory=list)
    size_on_object_storage: int = 0  # bytes of the topic's live batches in WAL objects
    tiered_segments: int = 0
    tiered_bytes: int = 0
    objects: int = 0  # WAL objects holding any of its live batches
    objects_bytes: int = 0  # their total size
    objects_with_deleted_batches: int = 0  # of those, objects that also hold deleted batches
    objects_with_deleted_batches_bytes: int = 0  # their total size
    deleted_bytes_in_objects: int = 0  # deleted batch bytes those objects still hold


@dataclass(frozen=True)
class ObjectOverview:
    key: str
    state: str
    total_size: int
    used_size: int
    batches: int
    topics: list[str]


@dataclass
class DisklessOverview:
    topics: list[TopicOverview]
    objects: list[ObjectOverview]
    awaiting_deletion: int = 0  # DELETING objects: no live batch, due for the collector
    awaiting_deletion_bytes: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def describe(
    coordinator: DisklessCoordinator, store: MetadataStore, *, topic_id: str | None = None
) -> DisklessOverview:
    """The overview of every diskless topic (or one), and of the WAL objects holding them."""
    names = {t.topic_id: t.name for t in store.topics()}
    usage = _usage(coordinator)  # object id -> topic id -> (batches, bytes)
    objects = {o.object_id: o for o in coordinator.wal_objects()}
    topics = []
    for found in coordinator.diskless_topics():
        if topic_id is not None and found.topic_id != topic_id:
            continue
        topic = store.topic_by_id(found.topic_id)
        overview = TopicOverview(
            topic=topic.name,
            topic_id=topic.topic_id,
            timestamp_type=found.timestamp_type,
            merged_into_tiered_storage=mergeable(topic) is None,
        )
        _add_partitions(overview, coordinator, store)
        _add_objects(overview, usage, objects)
        topics.append(overview)
    wanted = {t.topic_id for t in topics}
    listed = []
    for wal in objects.values():
        held = usage.get(int(wal.object_id or 0), {})
        if topic_id is not None and not held.keys() & wanted:
            continue
        listed.append(
            ObjectOverview(
                key=wal.object_key,
                state=wal.state,
                total_size=wal.total_size,
                used_size=wal.used_size,
                batches=sum(count for count, _ in held.values()),
                topics=sorted(names.get(t, t) for t in held),
            )
        )
    deleting = [o for o in objects.values() if o.state == WalObjectState.DELETING.value]
    return DisklessOverview(
        topics=topics,
        objects=listed,
        awaiting_deletion=len(deleting),
        awaiting_deletion_bytes=sum(o.total_size for o in deleting),
    )


def _add_partitions(
    overview: TopicOverview, coordinator: DisklessCoordinator, store: MetadataStore
) -> None:
    """Each partition's offsets, its WAL bytes and its tiered segments, summed into the topic."""
    for log in coordinator.logs(overview.topic_id):
        tiered = store.segment_summaries(
            overview.topic_id, log.partition, states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
        )
        overview.tiered_segments += len(tiered)
        overview.tiered_bytes += sum(s.segment_size_bytes for s in tiered)
        overview.partitions.append(
            PartitionOffsets(
                partition=log.partition,
                log_start_offset=log.log_start_offset,
                tiered_end_offset=max((s.end_offset for s in tiered), default=-1),
                wal_start_offset=log.diskless_start_offset,
                high_watermark=log.high_watermark,
                wal_bytes=log.byte_size,
            )
        )
        overview.size_on_object_storage += log.byte_size


def _add_objects(
    overview: TopicOverview,
    usage: dict[int, dict[str, tuple[int, int]]],
    objects: dict[int | None, WalObject],
) -> None:
    """The WAL objects holding the topic's live batches, and those of them that also hold
    deleted batches (kept alive by this topic while part of them is garbage)."""
    for object_id, by_topic in usage.items():
        if overview.topic_id not in by_topic:
            continue
        wal = objects[object_id]
        overview.objects += 1
        overview.objects_bytes += wal.total_size
        deleted = wal.total_size - HEADER_SIZE - wal.used_size
        if deleted > 0:
            overview.objects_with_deleted_batches += 1
            overview.objects_with_deleted_batches_bytes += wal.total_size
            overview.deleted_bytes_in_objects += deleted


def _usage(coordinator: DisklessCoordinator) -> dict[int, dict[str, tuple[int, int]]]:
    """Live batches and bytes per object and topic, in one GROUP BY."""
    query = select(
        col(DisklessBatch.object_id),
        col(DisklessBatch.topic_id),
        func.count(),
        func.sum(DisklessBatch.byte_size),
    ).group_by(col(DisklessBatch.object_id), col(DisklessBatch.topic_id))
    usage: dict[int, dict[str, tuple[int, int]]] = defaultdict(dict)
    with coordinator.engine.connect() as connection:
        for object_id, topic_id, count, size in connection.execute(query):
            usage[int(object_id)][str(topic_id)] = (int(count), int(size))
    return usage
