"""Removing a deleted topic's remote data as a durable, retryable job (D5-D7).

Kafka deletes a partition's remote data synchronously in the old leader's thread and never
retries (D6): a storage failure or an offline leader orphans the data, and the topic's
directories are left behind because RSM has no ``deletePartition`` (KAFKA-15166). tierflow
uses the RemotePartitionDeleteState machine Kafka defines but never emits:

1. ``mark_topic_deleted`` records DELETE_PARTITION_MARKED per partition, keyed by topic *id*,
   so a topic recreated under the same name never mixes with the one being removed;
2. ``remove_partition`` moves MARKED -> STARTED, deletes every segment not yet
   DELETE_SEGMENT_FINISHED through ``delete_remote_segment`` (durable intent, idempotent),
   sweeps whatever is still under the partition's prefix (objects no row knows about, e.g.
   from a copy killed before it recorded anything), and only then records FINISHED.

A run killed or failing anywhere leaves MARKED or STARTED, and the next run continues from
there; FINISHED is a no-op.

Codes like D6 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

from tierflow.faults import crash_point
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.errors import InvalidStateTransition
from tierflow.metadata.models import RemoteLogSegment, RemotePartitionDelete, Topic
from tierflow.metadata.states import RemoteLogSegmentState, RemotePartitionDeleteState
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.keys import AIVEN_KEYS, BucketKeys, KeyLayout
from tierflow.storage.object_store import ObjectStore

__all__ = [
    "PartitionRemovalError",
    "RemovalFailure",
    "RemovalReport",
    "mark_topic_deleted",
    "remove_marked_partitions",
    "remove_partition",
]

log = logging.getLogger(__name__)

MARKED = RemotePartitionDeleteState.DELETE_PARTITION_MARKED
STARTED = RemotePartitionDeleteState.DELETE_PARTITION_STARTED
FINISHED = RemotePartitionDeleteState.DELETE_PARTITION_FINISHED
SEGMENT_DELETED = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED
PREFIX_SWEEP = "prefix"  # RemovalFailure.what for a failed sweep of the partition prefix


@dataclass(frozen=True)
class RemovalFailure:
    what: str  # a segment id, or PREFIX_SWEEP
    message: str


@dataclass
class RemovalReport:
    topic: str  # the Kafka name, also for a retired topic
    topic_id: str
    partition: int
    already_finished: bool = False
    deleted: list[str] = field(default_factory=list)  # segment ids deleted by this run
    already_deleted: list[str] = field(default_factory=list)
    leftover_keys: list[str] = field(default_factory=list)  # swept objects no row knew about
    errors: list[RemovalFailure] = field(default_factory=list)
    finished: bool = False  # DELETE_PARTITION_FINISHED recorded (by this run or earlier)

    def as_dict(self) -> dict:
        return asdict(self)


class PartitionRemovalError(RuntimeError):
    """Some removals failed; those partitions stay STARTED and the next run continues them."""

    def __init__(self, reports: list[RemovalReport]) -> None:
        self.reports = reports
        lines = "; ".join(
            f"{r.topic}-{r.partition} {e.what}: {e.message}" for r in reports for e in r.errors
        )
        super().__init__(f"remote partition removal failed and will be retried: {lines}")


def mark_topic_deleted(
    store: MetadataStore,
    topic_name: str,
    *,
    actor: str,
    now_ms: int,
    topic_id: str | None = None,
) -> list[int]:
    """Mark every partition of the topic (its current id, or ``topic_id``); returns those
    newly marked.

    Marking again is harmless: a MARKED partition only counts the repeat (no event), and one
    already STARTED or FINISHED is left alone.
    """
    topic = store.topic_by_id(topic_id) if topic_id else store.topic(topic_name)
    newly = []
    for p in store.partitions(topic.topic_id):
        current = store.partition_delete(topic.topic_id, p.partition)
        if current is not None and current.delete_state is not MARKED:
            continue
        if store.mark_partition_delete(topic.topic_id, p.partition, actor=actor, now_ms=now_ms):
            newly.append(p.partition)
    log.info(
        "topic %s (%s): marked partitions %s for remote delete", topic_name, topic.topic_id, newly
    )
    return newly


def remove_partition(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    objects: ObjectStore,
    topic_id: str,
    partition: int,
    *,
    where: BucketKeys,
    actor: str,
    clock: Clock = wall_clock_ms,
) -> RemovalReport:
    """Carry one marked partition's removal from wherever it stopped to FINISHED; ``where``
    says under which keys its leftover objects are swept."""
    topic = _kafka_topic(store, topic_id)
    report = RemovalReport(topic.name, topic_id, partition)
    if not _start(store, topic_id, partition, report, actor=actor, clock=clock):
        return report
    crash_point("partition_removal.after_started")
    for row in store.segments(topic_id, partition):
        _delete_segment(store, rsm, topic, row, report, actor=actor, clock=clock)
    if report.errors:
        raise PartitionRemovalError([report])  # sweep later: the failed segments go first
    _sweep_prefix(objects, where.partition_prefix(topic.name, topic_id, partition), report)
    crash_point("partition_removal.after_prefix")
    store.transition_partition_delete(topic_id, partition, FINISHED, actor=actor, now_ms=clock())
    crash_point("partition_removal.after_finished")
    report.finished = True
    log.info(
        "removed remote data of %s-%d (%s): %d segment(s), %d leftover object(s)",
        topic.name,
        partition,
        topic_id,
        len(report.deleted),
        len(report.leftover_keys),
    )
    return report


def pending_removals(
    store: MetadataStore, *, grace_ms: int, now_ms: int
) -> list[RemotePartitionDelete]:
    """Every STARTED removal, and every MARKED one marked at least ``grace_ms`` ago (until then
    a topic deleted by mistake can still be restored from the bucket), oldest first."""
    due = now_ms - grace_ms
    found = [
        d
        for d in store.partition_deletes(states=[MARKED, STARTED])
        if d.delete_state == STARTED or d.event_timestamp_ms <= due
    ]
    return sorted(found, key=lambda d: (d.event_timestamp_ms, d.topic_id, d.partition))


def remove_marked_partitions(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    objects: ObjectStore,
    *,
    prefix: str,
    actor: str,
    clock: Clock = wall_clock_ms,
    grace_ms: int = 0,
    keys: KeyLayout = AIVEN_KEYS,
) -> list[RemovalReport]:
    """Every pending removal (``pending_removals``), oldest first; one failure does not stop
    the others."""
    pending = pending_removals(store, grace_ms=grace_ms, now_ms=clock())
    reports, failed = [], []
    for job in pending:
        try:
            reports.append(
                remove_partition(
                    store,
                    rsm,
                    objects,
                    job.topic_id,
                    job.partition,
                    where=BucketKeys(prefix, keys),
                    actor=actor,
                    clock=clock,
                )
            )
        except PartitionRemovalError as exc:
            reports.extend(exc.reports)
            failed.extend(exc.reports)
    if failed:
        raise PartitionRemovalError(failed)
    return reports


def _kafka_topic(store: MetadataStore, topic_id: str) -> Topic:
    """The topic row under its Kafka name: a retired row's object keys still use that name."""
    row = store.topic_by_id(topic_id)
    name = kafka_topic_name(row.name)
    return row if name == row.name else row.model_copy(update={"name": name})


def _start(
    store: MetadataStore,
    topic_id: str,
    partition: int,
    report: RemovalReport,
    *,
    actor: str,
    clock: Clock,
) -> bool:
    """MARKED -> STARTED (STARTED continues); False when already FINISHED."""
    current = store.partition_delete(topic_id, partition)
    if current is not None and current.delete_state is FINISHED:
        report.already_finished = report.finished = True
        return False
    try:
        store.transition_partition_delete(topic_id, partition, STARTED, actor=actor, now_ms=clock())
    except InvalidStateTransition:
        again = store.partition_delete(topic_id, partition)
        if again is not None and again.delete_state is FINISHED:  # another run finished it
            report.already_finished = report.finished = True
            return False
        raise  # not marked at all
    return True


def _delete_segment(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    row: RemoteLogSegment,
    report: RemovalReport,
    *,
    actor: str,
    clock: Clock,
) -> None:
    """Any state, COPY_SEGMENT_STARTED included, goes through DELETE_SEGMENT_STARTED."""
    if row.state == SEGMENT_DELETED:
        report.already_deleted.append(row.segment_id)
        return
    try:
        deleted = delete_remote_segment(store, rsm, topic, row, actor=actor, now_ms=clock())
    except InvalidStateTransition as exc:
        if store.segment(row.segment_id).state == SEGMENT_DELETED:
            report.already_deleted.append(row.segment_id)  # another worker finished it
            return
        report.errors.append(RemovalFailure(row.segment_id, str(exc)))
        return
    except Exception as exc:
        log.error(
            "%s-%d segment %s: remote delete failed: %s",
            topic.name,
            row.partition,
            row.segment_id,
            exc,
        )
        report.errors.append(RemovalFailure(row.segment_id, str(exc)))
        return
    if deleted:
        report.deleted.append(row.segment_id)
    else:
        report.already_deleted.append(row.segment_id)  # another worker finished it


def _sweep_prefix(objects: ObjectStore, where: str, report: RemovalReport) -> None:
    """Delete what is left under the partition's prefix ``where``: objects no segment row
    names."""
    try:
        leftovers = sorted(objects.list(where))
        if leftovers:
            log.warning("%s: deleting %d leftover object(s)", where, len(leftovers))
            objects.delete(leftovers)
    except Exception as exc:
        report.errors.append(RemovalFailure(PREFIX_SWEEP, f"{where}: {exc}"))
        raise PartitionRemovalError([report]) from exc
    report.leftover_keys.extend(leftovers)
