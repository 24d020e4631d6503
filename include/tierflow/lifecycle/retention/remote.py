"""Remote retention (Kafka's RLMExpirationTask): load a partition's inputs, plan, execute.

Planning is pure and lives in remote_plan.py; this module feeds it from the store (and the
broker's log dir when there is one) and carries a plan out:

1. the log start offset advances first (E6, Kafka's order), so no reader is ever sent to an
   offset whose data is being removed;
2. each deletion goes through ``delete_remote_segment`` (DELETE_SEGMENT_STARTED, storage
   delete, DELETE_SEGMENT_FINISHED), retries of earlier failed deletes first.

Kafka aborts the run at the first storage failure (E7). tierflow records the failure, carries
on with the other segments (each delete is independent) and raises RetentionError at the end,
so the task fails visibly; the failed segment stays DELETE_SEGMENT_STARTED and the next plan
retries it first. Running a plan twice deletes nothing more: deleted segments are skipped and
the start offset only moves forward.

Codes like E6 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from tierflow.faults import crash_point
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.copy.liveness import copy_lease_live
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.lifecycle.retention.export_hold import hold_for_export
from tierflow.lifecycle.retention.remote_plan import (
    DEFAULT_COPY_GRACE_MS,
    DELETE_FINISHED,
    DELETE_STARTED,
    LIVE_STATES,
    LogView,
    PlannedDeletion,
    RemoteRetentionPlan,
    RetentionReason,
    SegmentRow,
    plan_remote_retention,
    truncate_from_start,
)
from tierflow.metadata.errors import UnknownSegmentError
from tierflow.metadata.models import Partition, Topic
from tierflow.metadata.states import TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager

__all__ = [
    "DEFAULT_COPY_GRACE_MS",
    "PlannedDeletion",
    "RemoteRetentionPlan",
    "RetentionError",
    "RetentionReason",
    "RetentionReport",
    "SegmentDeleteError",
    "execute_remote_retention",
    "only_local_bytes",
    "plan_partition_retention",
    "plan_remote_retention",
    "plan_store_retention",
    "truncate_from_start",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SegmentDeleteError:
    segment_id: str
    reason: str
    message: str


@dataclass
class RetentionReport:
    topic: str
    partition: int
    log_start_offset: int
    new_log_start_offset: int | None = None  # set when this run moved it
    deleted: list[PlannedDeletion] = field(default_factory=list)
    already_deleted: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (segment id, why)
    errors: list[SegmentDeleteError] = field(default_factory=list)

    @property
    def freed_bytes(self) -> int:
        return sum(d.size_bytes for d in self.deleted)

    def as_dict(self) -> dict:
        return {**asdict(self), "freed_bytes": self.freed_bytes}


class RetentionError(RuntimeError):
    """Some planned deletions failed; they stay DELETE_SEGMENT_STARTED for the next run."""

    def __init__(self, report: RetentionReport) -> None:
        self.report = report
        lines = "; ".join(f"{e.segment_id} ({e.reason}): {e.message}" for e in report.errors)
        super().__init__(
            f"{report.topic}-{report.partition}: {len(report.errors)} remote segment "
            f"deletion(s) failed and will be retried by the next run: {lines}"
        )


def execute_remote_retention(
    plan: RemoteRetentionPlan,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    actor: str,
    clock: Clock = wall_clock_ms,
) -> RetentionReport:
    """Advance the log start offset, then delete each planned segment (retries first)."""
    report = RetentionReport(plan.topic, plan.partition, plan.log_start_offset)
    if not plan.deletions and plan.new_log_start_offset is None:
        return report
    topic = store.topic_by_id(plan.topic_id)
    if plan.new_log_start_offset is not None and store.advance_log_start_offset(
        plan.topic_id, plan.partition, plan.new_log_start_offset, actor=actor, now_ms=clock()
    ):
        report.new_log_start_offset = plan.new_log_start_offset
    crash_point("retention.after_log_start")
    ordered = sorted(plan.deletions, key=lambda d: d.reason != RetentionReason.RETRY_DELETE)
    for deletion in ordered:
        _delete_one(deletion, topic, store, rsm, report, actor=actor, clock=clock)
    if report.errors:
        raise RetentionError(report)
    return report


def _delete_one(
    deletion: PlannedDeletion,
    topic: Topic,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    report: RetentionReport,
    *,
    actor: str,
    clock: Clock,
) -> None:
    where = f"{topic.name}-{report.partition} segment {deletion.segment_id}"
    try:
        row = store.segment(deletion.segment_id)
    except UnknownSegmentError as exc:
        report.errors.append(SegmentDeleteError(deletion.segment_id, deletion.reason, str(exc)))
        return
    if row.state == DELETE_FINISHED:
        report.already_deleted.append(deletion.segment_id)
        return
    if row.state not in (deletion.state, DELETE_STARTED):
        # e.g. a "stale" copy that finished after all: it is data now, not an orphan.
        why = f"is {row.state}, was {deletion.state} when planned"
        log.warning("%s: not deleting, %s", where, why)
        report.skipped.append((deletion.segment_id, why))
        return
    stale_copy = deletion.reason == RetentionReason.STALE_COPY
    try:
        deleted = delete_remote_segment(
            store, rsm, topic, row, actor=actor, now_ms=clock(), abandoned=stale_copy
        )
    except Exception as exc:
        log.error("%s: remote delete failed (%s): %s", where, deletion.reason, exc)
        report.errors.append(
            SegmentDeleteError(deletion.segment_id, deletion.reason, f"{where}: {exc}")
        )
        return
    if deleted:
        report.deleted.append(deletion)
        return
    # Not by this run: another one (an overlapping run, a backfill) finished the delete, or
    # the "stale" copy finished after all and is data now.
    state = store.segment(deletion.segment_id).state
    if state == DELETE_FINISHED:
        report.already_deleted.append(deletion.segment_id)
    else:
        report.skipped.append((deletion.segment_id, f"is {state}, was {deletion.state}"))


def only_local_bytes(log_: PartitionLog, highest_remote_offset: int) -> int:
    """Kafka's onlyLocalLogSegmentsSize: local segments not yet (entirely) in remote storage."""
    return sum(s.size_in_bytes() for s in log_.segments() if s.base_offset > highest_remote_offset)


def plan_partition_retention(
    store: MetadataStore,
    topic: Topic,
    partition: Partition,
    *,
    now_ms: int,
    log_: PartitionLog | None = None,
    copy_grace_ms: int = DEFAULT_COPY_GRACE_MS,
) -> RemoteRetentionPlan:
    """Load one partition's inputs with an indexed query and plan it.

    With the broker's log dir, the lineage is its leader-epoch-checkpoint, the log end offset
    and the only-local bytes are the log's. Without it, the lineage is rebuilt from the remote
    segments, the log end offset is one past the highest remote offset, and only-local bytes
    count as 0 (so retention.bytes can only delete less, never more).

    A lease is judged live against ``now_ms`` too: in a backfill ``now_ms`` is in the past, so
    leases and copies younger than that night look live, which only makes the plan keep more.
    """
    rows = store.segment_summaries(topic.topic_id, partition.partition, states=LIVE_STATES)
    plan = plan_remote_retention(
        topic,
        partition.partition,
        rows,
        _log_view(partition, rows, log_),
        now_ms=now_ms,
        copy_lease_live=copy_lease_live(partition, now_ms),
        copy_grace_ms=copy_grace_ms,
    )
    return hold_for_export(plan, topic, partition.iceberg_exported_offset, rows)


def _log_view(
    partition: Partition, rows: Sequence[SegmentRow], log_: PartitionLog | None
) -> LogView:
    """The broker's log of the partition as planning sees it; without a log dir, one past the
    highest remote offset as its end and no only-local bytes (see plan_partition_retention)."""
    if log_ is None:
        highest = max([partition.highest_remote_offset, *(r.end_offset for r in rows)])
        return LogView(partition.log_start_offset, highest + 1)
    return LogView(
        max(partition.log_start_offset, log_.log_start_offset()),
        log_.log_end_offset(),
        only_local_bytes(log_, partition.highest_remote_offset),
        log_.leader_epoch_entries() or None,  # None: rebuilt from the rows
    )


def remote_retention_applies(topic: Topic) -> bool:
    """Remote data expires while tiering is on, and after KIP-950's "retain" disablement: the
    data stays readable and still expires by retention.* (a "delete" disablement removes it).
    Never on a topic handed over to the brokers: their RemoteLogManager expires it."""
    if not topic.copied_by_tierflow:
        return False
    if topic.remote_storage_enable and topic.tiered_state == TieredState.ENABLED:
        return True
    retained = topic.tiered_state in (TieredState.DISABLING, TieredState.DISABLED)
    return retained and topic.remote_log_disable_policy == "retain"


def plan_store_retention(
    store: MetadataStore,
    *,
    now_ms: int,
    logs: Iterable[PartitionLog] = (),
    topics: Iterable[str] | None = None,
    copy_grace_ms: int = DEFAULT_COPY_GRACE_MS,
) -> list[RemoteRetentionPlan]:
    """Plan every partition of every tiered topic (remote storage enabled, state ENABLED).

    One query per topic for its partitions and one indexed query per partition for its live
    rows; ``logs`` supplies the broker's view for the partitions it has. Plans with nothing to
    do are included, so a caller can report per partition.
    """
    by_key = {(p.topic, p.partition): p for p in logs}
    wanted = None if topics is None else set(topics)
    plans = []
    for topic in store.topics():
        if wanted is not None and topic.name not in wanted:
            continue
        if not remote_retention_applies(topic):
            continue
        for partition in store.partitions(topic.topic_id):
            plans.append(
                plan_partition_retention(
                    store,
                    topic,
                    partition,
                    now_ms=now_ms,
                    log_=by_key.get((topic.name, partition.partition)),
                    copy_grace_ms=copy_grace_ms,
                )
            )
    return plans
