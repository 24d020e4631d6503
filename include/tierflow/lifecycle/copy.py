"""Segment copy for one partition: Kafka's RLMCopyTask, made resumable.

Per segment: a fresh segment id, COPY_SEGMENT_STARTED, upload of the log, every index, the
producer snapshot and the leader-epoch entries, verification of every object (size and
sha256), then COPY_SEGMENT_FINISHED, which also advances the highest remote offset in the same
transaction.

Where Kafka leaks, tierflow cleans up. A copy killed between STARTED and FINISHED leaves a
COPY_SEGMENT_STARTED row and maybe some objects; Kafka re-uploads under a new id and leaves the
orphan to retention. Here the partition's copy lease guarantees no other attempt is alive, so
every COPY_SEGMENT_STARTED (and any DELETE_SEGMENT_STARTED) row found at the start of a run is
deleted through the regular transitions before copying resumes. A rerun from any point thus ends
in the same state as an uninterrupted run: one FINISHED segment per eligible local segment and no
stray objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from tierflow.faults import crash_point
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.copy_candidates import (
    CopyCandidate,
    candidate_segments,
    copy_start_offset,
)
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.lifecycle.segment_facts import inspect_segment
from tierflow.metadata.models import Topic
from tierflow.metadata.states import RemoteLogSegmentState, TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.storage.errors import VerificationError
from tierflow.storage.remote_storage_manager import RemoteSegment, RemoteStorageManager

log = logging.getLogger(__name__)

_UNFINISHED = (
    RemoteLogSegmentState.COPY_SEGMENT_STARTED,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED,
)


class PartitionBusyError(RuntimeError):
    """Another live attempt holds the partition's copy lease."""


class TopicIdMismatchError(ValueError):
    """The log directory's partition.metadata names another topic id than the store."""


@dataclass(frozen=True)
class CopiedSegment:
    segment_id: str
    start_offset: int
    end_offset: int
    size_in_bytes: int


@dataclass
class PartitionCopyReport:
    topic: str
    partition: int
    copied: list[CopiedSegment] = field(default_factory=list)
    cleaned_up: list[str] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)  # base offsets a dry run would copy
    skipped: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def copy_partition(
    log_: PartitionLog,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    owner: str,
    lease_ttl_s: int = 900,
    clock: Clock = wall_clock_ms,
    dry_run: bool = False,
    on_copied: Callable[[CopiedSegment], None] | None = None,
) -> PartitionCopyReport:
    """Copy every eligible segment of one partition; safe to rerun from any point."""
    report = PartitionCopyReport(log_.topic, log_.partition)
    topic = store.topic(log_.topic)
    reason = _not_copyable(topic)
    if reason:
        report.skipped = reason
        return report
    _check_topic_id(log_, topic)
    high_watermark = log_.high_watermark()
    if high_watermark is None:
        report.skipped = "no high watermark in replication-offset-checkpoint"
        return report

    segments = log_.segments()
    first_local = segments[0].base_offset if segments else 0
    state = store.ensure_partition(
        topic.topic_id,
        log_.partition,
        log_start_offset=log_.log_start_offset(),
        local_log_start_offset=first_local,
    )
    log_start = max(state.log_start_offset, log_.log_start_offset())
    # The partition's highest remote offset only moves forward, like Kafka's
    # highestOffsetForEpoch: deleting remote segments never makes them eligible again.
    from_offset = copy_start_offset(state.highest_remote_offset, log_start)
    candidates = candidate_segments(segments, from_offset=from_offset, upper_bound=high_watermark)
    if dry_run:
        report.pending = [c.base_offset for c in candidates]
        return report

    _take_lease(store, topic, log_.partition, owner, lease_ttl_s, clock)
    try:
        report.cleaned_up = _clean_up_abandoned(store, rsm, topic, log_.partition, owner, clock)
        # Cleanup never moves the highest remote offset, so the candidates still stand.
        for candidate in candidates:
            _take_lease(store, topic, log_.partition, owner, lease_ttl_s, clock)
            copied = copy_segment(log_, candidate, topic, store, rsm, owner=owner, clock=clock)
            report.copied.append(copied)
            if on_copied:
                on_copied(copied)
    finally:
        store.release_lease(topic.topic_id, log_.partition, owner)
    return report


def copy_segment(
    log_: PartitionLog,
    candidate: CopyCandidate,
    topic: Topic,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    owner: str,
    clock: Clock = wall_clock_ms,
) -> CopiedSegment:
    facts = inspect_segment(log_, candidate)  # raises, naming the file, before any state exists
    segment_id = new_kafka_uuid()
    store.add_segment(
        segment_id=segment_id,
        topic_id=topic.topic_id,
        partition=log_.partition,
        start_offset=candidate.base_offset,
        end_offset=candidate.end_offset,
        max_timestamp_ms=facts.max_timestamp_ms,
        leader_epoch=facts.leader_epoch,
        segment_leader_epochs=[(e.epoch, e.start_offset) for e in facts.leader_epochs],
        segment_size_bytes=facts.size_in_bytes,
        tiered_epoch=topic.tiered_epoch,
        txn_index_empty=facts.txn_index_empty,
        owner=owner,
        actor=owner,
        now_ms=clock(),
    )
    crash_point("copy.after_started")
    target = RemoteSegment(
        topic=topic.name,
        topic_id=topic.topic_id,
        partition=log_.partition,
        segment_id=segment_id,
        start_offset=candidate.base_offset,
        end_offset=candidate.end_offset,
    )
    try:
        objects = rsm.copy_log_segment_data(target, facts.data)
        crash_point("copy.after_upload")
        rsm.verify(target, objects)
    except VerificationError:
        # Kafka's KAFKA-17062 cleanup: a failed copy is deleted at once, then the error surfaces.
        delete_remote_segment(
            store, rsm, topic, store.segment(segment_id), actor=owner, now_ms=clock()
        )
        raise
    crash_point("copy.before_finished")
    store.transition_segment(
        segment_id,
        RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
        actor=owner,
        now_ms=clock(),
        objects=[(_kind(o.key), o.key, o.size, o.sha256) for o in objects],
    )
    crash_point("copy.after_finished")
    log.info(
        "copied %s-%d offsets %d-%d (%d bytes) as segment %s",
        topic.name,
        log_.partition,
        candidate.base_offset,
        candidate.end_offset,
        facts.size_in_bytes,
        segment_id,
    )
    return CopiedSegment(
        segment_id, candidate.base_offset, candidate.end_offset, facts.size_in_bytes
    )


def _kind(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def _not_copyable(topic: Topic) -> str | None:
    if not topic.remote_storage_enable:
        return "remote.storage.enable=false"
    if topic.tiered_state != TieredState.ENABLED:
        return f"tiered state is {topic.tiered_state}"
    return None


def _check_topic_id(log_: PartitionLog, topic: Topic) -> None:
    local_id = log_.topic_id()
    if local_id is not None and local_id != topic.topic_id:
        raise TopicIdMismatchError(
            f"{log_.path / 'partition.metadata'}: topic id {local_id} differs from "
            f"{topic.topic_id} registered for topic {topic.name}; refusing to copy"
        )


def _take_lease(
    store: MetadataStore, topic: Topic, partition: int, owner: str, ttl_s: int, clock: Clock
) -> None:
    if not store.acquire_lease(
        topic.topic_id, partition, owner, now_ms=clock(), ttl_ms=ttl_s * 1000
    ):
        held = store.partition(topic.topic_id, partition)
        holder = held.lease_owner if held else "?"
        raise PartitionBusyError(
            f"{topic.name}-{partition}: copy lease held by {holder!r}; "
            "retry after it finishes or its lease expires"
        )


def _clean_up_abandoned(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    partition: int,
    owner: str,
    clock: Clock,
) -> list[str]:
    """Delete what interrupted attempts left: safe because we hold the partition lease."""
    cleaned = []
    for row in store.segments(topic.topic_id, partition, states=_UNFINISHED):
        log.warning(
            "removing abandoned %s segment %s of %s-%d (offsets %d-%d, started by %s)",
            row.state,
            row.segment_id,
            topic.name,
            partition,
            row.start_offset,
            row.end_offset,
            row.owner,
        )
        delete_remote_segment(store, rsm, topic, row, actor=owner, now_ms=clock())
        cleaned.append(row.segment_id)
    return cleaned
