"""Merging a diskless partition's WAL into tiered segments, resumable like the classic copy.

A consolidated diskless topic (Inkless: ``diskless.enable`` and ``remote.storage.enable``)
keeps its newest batches in shared WAL objects and its older ones in ordinary tiered
segments. The merge moves batches from the first to the second, in three steps, so that Spark
can do the heavy work while Airflow owns every state transition:

1. ``prepare_merge`` (Airflow), under the partition's copy lease:
   - attempts that a killed run left (COPY_SEGMENT_STARTED, DELETE_SEGMENT_STARTED) are deleted
     through the regular transitions, as ``lifecycle.copy`` does;
   - batches that a FINISHED segment already covers (a run killed after FINISHED and before
     dropping them) are dropped from the WAL now: their offsets are never copied twice;
   - the batches committed before the cutoff, after the highest remote offset, are rolled into
     segments at ``segment.bytes`` (``merge_plan``) and each is recorded COPY_SEGMENT_STARTED.
2. ``run_merge_job`` (Spark, or the worker for small batches): build each segment from the WAL
   while it streams into the storage manager's upload, each byte written once. No state.
3. ``finalize_merge`` (Airflow): the classic ``finalize_copy`` verifies every object and records
   COPY_SEGMENT_FINISHED in offset order (deleting failed attempts); right after each segment
   is FINISHED its batches are dropped from the WAL: the WAL start moves past them, the objects'
   used sizes shrink, and emptied objects are marked for the garbage collector.

Every write of a merge attempt is fenced by its taking of the lease, as in the classic copy
(``metadata.partition_registry.Lease``): each run takes the lease under the same owner, so a
later or overlapping run takes it over at once, and the earlier attempt, though still alive, can
then neither start, finish nor delete a segment (LeaseLostError), so it drops no batches either.
The token rides in ``plan.copy.lease`` (and through XCom) to ``finalize_copy``.

Reads of merged offsets then go to the tiered segment (``read.fetch_diskless`` continues from
tiered storage below the WAL start), byte for byte what the WAL returned before.

The merge never turns tiering on: a diskless topic without ``remote.storage.enable`` keeps its
data in the WAL until retention deletes it, as in Inkless.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Required, TypedDict, Unpack

from tierflow.config import default
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.merge_job import (
    MergeJob,
    MergeSegmentJob,
    run_merge_job,
    segment_file_names,
)
from tierflow.diskless.merge_plan import (
    KAFKA_SEGMENT_BYTES,
    MergedSegment,
    extend_lineage,
    roll_segments,
)
from tierflow.faults import crash_point
from tierflow.kafka.leader_epoch import EpochEntry, entries_before, leader_epoch_checkpoint_bytes
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.lease import partition_lease, release_taking
from tierflow.lifecycle.copy.plan import CopiedSegment, CopyPlan, PartitionCopyReport
from tierflow.lifecycle.copy.prepare import clean_up_abandoned
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult
from tierflow.lifecycle.started import fresh_segment, started_segment
from tierflow.metadata.epochs import epochs_from_segments
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.models import Topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.rsm import RemoteSegment, RemoteStorageManager
from tierflow.storage.object_store import ObjectStore

if TYPE_CHECKING:
    from tierflow.config import Settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MergeOptions:
    """What a merge run takes from its caller (the DAG's params, the CLI's flags)."""

    cutoff_ms: int  # batches committed at or after this stay in the WAL
    delete_grace_ms: int  # emptied WAL objects stay readable this long
    segment_bytes: int = KAFKA_SEGMENT_BYTES
    max_segments: int | None = None  # per partition and run; None: every batch below the cutoff
    lease_ttl_s: int = default("copy_lease_ttl_s")
    # The process holding the lease from prepare to finalize (a CLI run; copy/lease.py).
    holder: LeaseHolder | None = None

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        min_age_ms: int,
        segment_bytes: int = KAFKA_SEGMENT_BYTES,
        max_segments: int | None = None,
        holder: LeaseHolder | None = None,
    ) -> MergeOptions:
        """A run over the batches committed ``min_age_ms`` ago or earlier, with the configured
        grace and lease (the DAG's and the CLI's); ``max_segments`` 0 or None: no limit."""
        return cls(
            cutoff_ms=wall_clock_ms() - min_age_ms,
            delete_grace_ms=settings.diskless.delete_grace_ms,
            segment_bytes=segment_bytes,
            max_segments=max_segments or None,
            lease_ttl_s=settings.copy_lease_ttl_s,
            holder=holder,
        )


class MergeRun(TypedDict, total=False):
    """prepare_merge's keyword arguments, as merge_partition passes them on."""

    owner: Required[str]
    clock: Clock
    dry_run: bool
    actor: str | None


@dataclass
class MergeReport:
    topic: str
    partition: int
    merged: list[CopiedSegment] = field(default_factory=list)  # FINISHED by this run
    cleaned_up: list[str] = field(default_factory=list)  # killed attempts removed
    healed_batches: int = 0  # batches a FINISHED segment already held, dropped now
    dropped_batches: int = 0  # batches dropped after their segment was FINISHED
    dropped_bytes: int = 0
    objects_emptied: list[str] = field(default_factory=list)  # now due for the collector
    pending: list[list[int]] = field(default_factory=list)  # dry run: [start, end, bytes]
    skipped: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> MergeReport:
        merged = [CopiedSegment(**s) for s in raw.get("merged", [])]
        return cls(**{**raw, "merged": merged})


@dataclass
class MergePlan:
    """What prepare_merge recorded: the classic copy plan finalize_copy takes (with the taking
    of the lease, ``copy.lease``, that fences finalize's writes and is released by token), and
    the job."""

    report: MergeReport
    copy: CopyPlan
    job: MergeJob | None = None
    dry_run: bool = False


def mergeable(topic: Topic) -> str | None:
    """Why the topic's WAL is not merged into tiered segments, or None when it is."""
    if not topic.remote_storage_enable:
        return "remote.storage.enable=false: not a consolidated diskless topic"
    if topic.tiered_state != TieredState.ENABLED:
        return f"tiered state is {topic.tiered_state}"
    if topic.remote_log_copy_disable:
        return "remote.log.copy.disable=true"
    return None


def merge_targets(
    coordinator: DisklessCoordinator, store: MetadataStore, topic_id: str | None = None
) -> list[tuple[str, int]]:
    """(topic id, partition) of every diskless partition the merge works on."""
    targets = []
    for log_ in coordinator.logs(topic_id):
        topic = store.topic_by_id(log_.topic_id)
        if mergeable(topic) is not None:
            continue
        if store.partition_delete(log_.topic_id, log_.partition) is not None:
            continue  # the topic was deleted: remote partition removal owns it now
        targets.append((log_.topic_id, log_.partition))
    return targets


def prepare_merge(
    coordinator: DisklessCoordinator,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic_id: str,
    partition: int,
    options: MergeOptions,
    **run: Unpack[MergeRun],
) -> MergePlan:
    """Clean up, heal, choose the batches, roll them into segments, mark them STARTED.

    On success (not a dry run, not skipped) the caller holds the partition's copy lease until
    ``finalize_merge`` releases it. ``actor`` (the owner when unset) is recorded as who started
    each segment.
    """
    owner, clock = run["owner"], run.get("clock", wall_clock_ms)
    dry_run, actor = run.get("dry_run", False), run.get("actor")
    topic = store.topic_by_id(topic_id)
    report = MergeReport(topic.name, partition)
    plan = MergePlan(report, CopyPlan(PartitionCopyReport(topic.name, partition)), dry_run=dry_run)
    if _skip(plan, mergeable(topic)):
        return plan
    if dry_run:
        return _dry_run(coordinator, store, topic_id, partition, options, plan)

    # The classic partition row holds the lease and the highest remote offset; for a diskless
    # partition its "local" log is the WAL.
    wal = coordinator.log(topic_id, partition)
    store.ensure_partition(
        topic_id,
        partition,
        log_start_offset=wal.log_start_offset,
        local_log_start_offset=wal.diskless_start_offset,
    )
    crash_point("merge.before_lease")
    ttl_s = options.lease_ttl_s
    with partition_lease(store, topic, partition, owner, ttl_s, clock, options.holder) as lease:
        plan.copy.lease = lease  # finalize_copy writes under it and releases it by its token
        crash_point("merge.after_lease")
        topic = store.topic_by_id(topic_id)  # under the lease: tiering may have changed
        if _skip(plan, mergeable(topic)):
            release_taking(store, lease)
            return plan
        report.cleaned_up = clean_up_abandoned(store, rsm, topic, lease, clock)
        highest = _heal(coordinator, store, topic_id, partition, options, report, clock)
        crash_point("merge.after_heal")
        segments = _choose(coordinator, topic_id, partition, highest, options)
        if segments:
            plan.job = _record_started(
                store, topic, partition, segments, options, plan, actor or owner, clock
            )
    return plan


def _dry_run(
    coordinator: DisklessCoordinator,
    store: MetadataStore,
    topic_id: str,
    partition: int,
    options: MergeOptions,
    plan: MergePlan,
) -> MergePlan:
    """The segments a merge would write, in ``plan.report.pending``; nothing recorded."""
    highest = store.partition(topic_id, partition)
    start = -1 if highest is None else highest.highest_remote_offset
    for s in _choose(coordinator, topic_id, partition, start, options):
        plan.report.pending.append([s.start_offset, s.end_offset, s.size_in_bytes])
    return plan


def finalize_merge(
    plan: MergePlan,
    results: Mapping[str, RewriteResult],
    coordinator: DisklessCoordinator,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    owner: str,
    delete_grace_ms: int,
    clock: Clock = wall_clock_ms,
) -> MergeReport:
    """Verify, record COPY_SEGMENT_FINISHED in offset order and drop each finished segment's
    batches from the WAL; release the lease. Raises CopyFailedError like finalize_copy when a
    segment failed (it and the ones after it are deleted; the WAL still holds their batches)."""
    report = plan.report
    if plan.dry_run:
        return report
    topic_id = store.topic(report.topic).topic_id

    def drop(copied: CopiedSegment) -> None:
        crash_point("merge.before_drop")
        dropped = coordinator.drop_merged_batches(
            topic_id,
            report.partition,
            copied.end_offset,
            now_ms=clock(),
            delete_grace_ms=delete_grace_ms,
        )
        crash_point("merge.after_drop")
        report.merged.append(copied)
        report.dropped_batches += dropped.batches_deleted
        report.dropped_bytes += dropped.bytes_deleted
        report.objects_emptied += dropped.objects_marked

    finalize_copy(plan.copy, results, store, rsm, owner=owner, clock=clock, on_copied=drop)
    for copied in report.merged:
        log.info(
            "merged %s-%d offsets %d-%d (%d bytes) into segment %s",
            report.topic,
            report.partition,
            copied.start_offset,
            copied.end_offset,
            copied.size_in_bytes,
            copied.segment_id,
        )
    return report


def merge_partition(
    coordinator: DisklessCoordinator,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    objects: ObjectStore,
    topic_id: str,
    partition: int,
    options: MergeOptions,
    **run: Unpack[MergeRun],
) -> MergeReport:
    """Prepare, build and upload in this process, finalize: the whole merge of one partition."""
    plan = prepare_merge(coordinator, store, rsm, topic_id, partition, options, **run)
    results: dict[str, RewriteResult] = {}
    if plan.job is not None:
        try:
            for result in run_merge_job(plan.job, objects, rsm):
                results[result.segment_id] = result
        except BaseException:
            # Ctrl-C or a bug: give the lease back, so no other owner waits out its TTL; the
            # next run removes the STARTED segments as a killed run's.
            if plan.copy.lease is not None:
                release_taking(store, plan.copy.lease)
            raise
    return finalize_merge(
        plan,
        results,
        coordinator,
        store,
        rsm,
        owner=run["owner"],
        delete_grace_ms=options.delete_grace_ms,
        clock=run.get("clock", wall_clock_ms),
    )


def _skip(plan: MergePlan, reason: str | None) -> bool:
    plan.report.skipped = plan.copy.report.skipped = reason
    return reason is not None


def _heal(
    coordinator: DisklessCoordinator,
    store: MetadataStore,
    topic_id: str,
    partition: int,
    options: MergeOptions,
    report: MergeReport,
    clock: Clock,
) -> int:
    """Drop WAL batches a FINISHED segment already holds; return the highest remote offset.

    The highest remote offset only moves forward (Kafka's highestOffsetForEpoch), and it is
    raised in the same transaction that records FINISHED: whatever lies at or below it is in
    tiered storage (or was, until remote retention), never to be merged again.
    """
    state = store.partition(topic_id, partition)
    highest = -1 if state is None else state.highest_remote_offset
    if highest >= coordinator.log(topic_id, partition).diskless_start_offset:
        healed = coordinator.drop_merged_batches(
            topic_id, partition, highest, now_ms=clock(), delete_grace_ms=options.delete_grace_ms
        )
        if healed.batches_deleted:
            log.warning(
                "%s-%d: dropped %d batches up to offset %d that a finished segment holds "
                "(a merge was killed before dropping them)",
                report.topic,
                partition,
                healed.batches_deleted,
                highest,
            )
        report.healed_batches += healed.batches_deleted
        report.dropped_bytes += healed.bytes_deleted
        report.objects_emptied += healed.objects_marked
    return highest


def _choose(
    coordinator: DisklessCoordinator,
    topic_id: str,
    partition: int,
    highest_remote: int,
    options: MergeOptions,
) -> list[MergedSegment]:
    """The WAL's oldest batches committed before the cutoff, rolled into segments."""
    budget = options.segment_bytes * options.max_segments if options.max_segments else None
    found = coordinator.merge_candidates(
        committed_before_ms=options.cutoff_ms,
        topic_id=topic_id,
        partition=partition,
        max_bytes_per_partition=budget,
    )
    batches = [b for b in found[0].batches if b.base_offset > highest_remote] if found else []
    segments = roll_segments(batches, segment_bytes=options.segment_bytes)
    return segments[: options.max_segments] if options.max_segments else segments


def _record_started(
    store: MetadataStore,
    topic: Topic,
    partition: int,
    segments: list[MergedSegment],
    options: MergeOptions,
    plan: MergePlan,
    actor: str,
    clock: Clock,
) -> MergeJob:
    """COPY_SEGMENT_STARTED for each segment, and the job that builds and uploads them."""
    name = kafka_topic_name(topic.name)
    finished = store.segment_summaries(topic.topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
    lineage: list[EpochEntry] = epochs_from_segments(finished)  # the tiered segments' history
    previous = None
    if finished:
        last = max(finished, key=lambda s: s.end_offset)
        previous = RemoteSegment(
            name, topic.topic_id, partition, last.segment_id, last.start_offset, last.end_offset
        )
    jobs = []
    for segment in segments:
        remote = fresh_segment(name, topic.topic_id, partition, segment)
        _add_started(store, topic, remote, segment, plan, actor, clock)
        crash_point("merge.after_started")
        lineage = extend_lineage(lineage, segment.leader_epochs)
        # Kafka uploads the leader-epoch cache's entries that start before the next segment.
        files = segment_file_names(
            segment.start_offset,
            segment.end_offset,
            leader_epoch_index=leader_epoch_checkpoint_bytes(
                entries_before(lineage, segment.end_offset + 1)
            ),
        )
        rewrite = RewriteJob.build(remote, files, segment.size_in_bytes)
        plan.copy.jobs.append(rewrite)
        jobs.append(MergeSegmentJob(rewrite, segment.batches))
    return MergeJob(name, topic.topic_id, partition, tuple(jobs), previous)


def _add_started(
    store: MetadataStore,
    topic: Topic,
    remote: RemoteSegment,
    segment: MergedSegment,
    plan: MergePlan,
    actor: str,
    clock: Clock,
) -> None:
    """Record one merged segment COPY_SEGMENT_STARTED (one transaction, under the lease)."""
    started = started_segment(
        remote,
        segment,
        leader_epoch=segment.leader_epochs[-1].epoch,
        tiered_epoch=topic.tiered_epoch,
        txn_index_empty=True,
        owner=actor,
    )
    # Nothing is recorded once another attempt took the lease over.
    store.add_segment(started, actor=actor, now_ms=clock(), lease=plan.copy.lease)
