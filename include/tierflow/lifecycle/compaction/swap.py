"""A partition's remote compaction as state transitions, resumable at every step.

1. ``prepare_compaction`` (Airflow), under the partition's copy lease (one writer of a
   partition's remote segments at a time, the copy and the diskless merge included):
   - attempts a killed run left (COPY_SEGMENT_STARTED, DELETE_SEGMENT_STARTED) are deleted or
     their deletes finished, as the copy does;
   - segments an interrupted swap already replaced (``supersede``) are deleted: the swap is
     rolled forward;
   - the range and its groups are chosen (``rules``), and each group's new segment is recorded
     COPY_SEGMENT_STARTED.
2. ``passes.run_compaction_job`` (Spark, or the engine's processes): both passes and the
   uploads. No state.
3. ``finalize_compaction`` (Airflow): each new segment is verified and recorded
   COPY_SEGMENT_FINISHED with the size it turned out to have, the clean section moves to the
   range's end, and only then do the replaced segments go DELETE_SEGMENT_STARTED, storage
   delete, DELETE_SEGMENT_FINISHED. A group that failed, would change nothing or came out
   empty has its new segment deleted instead (an empty group's sources go all the same).

A reader always sees one complete log: while both generations are FINISHED, the new segment
serves the offsets from its start (Kafka's RLMM replaces a segment at the same start offset);
wherever a fetch crosses from one generation to the other, the offsets before are from one and
those after from the other, and each generation holds every key's latest record of its range.
"""

from __future__ import annotations

import logging
from typing import Required, TypedDict, Unpack

from tierflow.faults import crash_point
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.producer_snapshot import producer_snapshot_entries
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.compaction.finalize import finalize_compaction
from tierflow.lifecycle.compaction.job import CompactionGroup, CompactionJob
from tierflow.lifecycle.compaction.passes import run_compaction_job
from tierflow.lifecycle.compaction.report import (
    CompactionOptions,
    CompactionPlan,
    CompactionReport,
)
from tierflow.lifecycle.compaction.rules import (
    CompactionRules,
    before_open_transaction,
    cleanable_range,
    group_by_size,
    needs_compaction,
)
from tierflow.lifecycle.compaction.supersede import superseded
from tierflow.lifecycle.copy.lease import partition_lease, release_taking
from tierflow.lifecycle.copy.prepare import clean_up_abandoned
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.lifecycle.started import SourceTotals, started_segment
from tierflow.metadata.models import Partition, RemoteLogSegment, Topic
from tierflow.metadata.partition_registry import Lease
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.tierable import is_compacted
from tierflow.rsm import IndexType, RemoteSegment, RemoteStorageManager
from tierflow.segment_refs import remote_segment

log = logging.getLogger(__name__)
NO_TXN = -1


def compactable(topic: Topic) -> str | None:
    """Why the topic's remote tier is not compacted, or None when it is."""
    if not is_compacted(topic.cleanup_policy):
        return f"cleanup.policy={topic.cleanup_policy}: not a compacted topic"
    if topic.tiered_state != TieredState.ENABLED:
        return f"tiered state is {topic.tiered_state}"
    if not topic.copied_by_tierflow:
        return "the brokers copy it (handed over, or followed), and do not compact their tier"
    return None


def prepare_compaction(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic_id: str,
    partition: int,
    options: CompactionOptions,
    *,
    owner: str,
    clock: Clock = wall_clock_ms,
    dry_run: bool = False,
) -> CompactionPlan:
    """Clean up, roll an interrupted swap forward, choose the groups, mark them STARTED.

    On success with a job the caller holds the lease until ``finalize_compaction``."""
    topic = store.topic_by_id(topic_id)
    plan = CompactionPlan(CompactionReport(topic.name, partition), dry_run=dry_run)
    if _skip(plan, compactable(topic)) or _skip(plan, _no_partition(store, topic, partition)):
        return plan
    if dry_run:
        for group in _choose(store, rsm, topic, partition, options, plan.report):
            size = sum(s.segment_size_bytes for s in group)
            plan.report.pending.append([group[0].start_offset, group[-1].end_offset, size])
        return plan
    ttl_s = options.lease_ttl_s
    with partition_lease(store, topic, partition, owner, ttl_s, clock, options.holder) as lease:
        plan.lease = lease
        topic = store.topic_by_id(topic_id)  # under the lease: the topic may have changed
        if _skip(plan, compactable(topic)):
            release_taking(store, lease)
            return plan
        plan.report.cleaned_up = clean_up_abandoned(store, rsm, topic, lease, clock)
        plan.report.replaced = roll_forward(store, rsm, topic, partition, lease, clock)
        crash_point("compaction.after_roll_forward")
        groups = _choose(store, rsm, topic, partition, options, plan.report)
        if groups:
            plan.job = _record_started(store, topic, partition, groups, options, lease, clock)
    return plan


def roll_forward(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    partition: int,
    lease: Lease,
    clock: Clock,
) -> list[str]:
    """Delete the segments an interrupted swap already replaced."""
    gone = []
    for row in superseded(store, topic.topic_id, partition):
        log.warning(
            "%s-%d: deleting segment %s (offsets %d-%d): a compaction replaced it",
            topic.name,
            partition,
            row.segment_id,
            row.start_offset,
            row.end_offset,
        )
        if delete_remote_segment(
            store, rsm, topic, row, actor=lease.owner, now_ms=clock(), lease=lease
        ):
            gone.append(row.segment_id)
    return gone


def _no_partition(store: MetadataStore, topic: Topic, partition: int) -> str | None:
    if store.partition(topic.topic_id, partition) is None:
        return "no remote segments"
    if store.partition_delete(topic.topic_id, partition) is not None:
        return "the topic was deleted: remote partition removal owns it"
    return None


def _choose(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    partition: int,
    options: CompactionOptions,
    report: CompactionReport,
) -> list[list[RemoteLogSegment]]:
    """The groups of the cleanable range, if the range is due (or the run is forced)."""
    rules = CompactionRules.of(topic)
    state = store.partition(topic.topic_id, partition)
    finished = store.segments(topic.topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
    segments = cleanable_range(finished, state, rules, options.now_ms)
    first_open = None
    if needs_compaction(segments, state, rules, options.now_ms) is not None:
        # Only a due range is worth a read of the tiered log's end.
        first_open = _first_open_txn(rsm, topic, max(finished, key=lambda row: row.end_offset))
        segments = before_open_transaction(segments, first_open)
    report.reason = needs_compaction(segments, state, rules, options.now_ms)
    if report.reason is None and options.force and segments:
        report.reason = "asked for"
    if report.reason is None:
        report.skipped = _why_not(segments, state, first_open)
        return []
    return group_by_size(segments, rules.segment_bytes)


def _why_not(segments: list[RemoteLogSegment], state: Partition, first_open: int | None) -> str:
    if first_open is not None:
        return (
            f"the dirty segments wait for the marker of a transaction open from offset "
            f"{first_open}, which is not tiered yet"
        )
    if not segments:
        return "no segment is cleanable (all still local, or younger than min.compaction.lag.ms)"
    return (
        f"clean enough: dirty segments after offset {state.remote_cleaned_offset} fall short of "
        "min.cleanable.dirty.ratio and max.compaction.lag.ms"
    )


def _first_open_txn(rsm: RemoteStorageManager, topic: Topic, last: RemoteLogSegment) -> int | None:
    """The first offset of a transaction still open at the tiered log's end, from the producer
    snapshot uploaded with its last segment (Kafka's state at that offset): whether it
    commits is not known yet."""
    ref = remote_segment(topic, last)
    data = rsm.fetch_index(ref, IndexType.PRODUCER_SNAPSHOT)
    entries = producer_snapshot_entries(data, f"{ref.describe()} producer snapshot")
    open_txns = [
        e.current_txn_first_offset for e in entries if e.current_txn_first_offset != NO_TXN
    ]
    return min(open_txns, default=None)


def _record_started(
    store: MetadataStore,
    topic: Topic,
    partition: int,
    groups: list[list[RemoteLogSegment]],
    options: CompactionOptions,
    lease: Lease,
    clock: Clock,
) -> CompactionJob:
    """COPY_SEGMENT_STARTED for each group's new segment, with its sources' totals (bounds of
    what it will be), and the job that writes them."""
    jobs = []
    for group in groups:
        sources = tuple(remote_segment(topic, row) for row in group)
        first, last = sources[0], sources[-1]
        new = {"segment_id": new_kafka_uuid(), "end_offset": last.end_offset}
        target = RemoteSegment(**{**first.identity(), **new})
        size = sum(row.segment_size_bytes for row in group)
        totals = SourceTotals(max(row.max_timestamp_ms for row in group), _epochs_of(group), size)
        started = started_segment(target, totals, txn_index_empty=True)
        store.add_segment(started, actor=lease.owner, now_ms=clock(), lease=lease)
        crash_point("compaction.after_started")
        jobs.append(CompactionGroup(target, sources, size))
    rules = CompactionRules.of(topic)
    end = jobs[-1].target.end_offset
    later = [
        remote_segment(topic, row)
        for row in store.segments(topic.topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
        if row.start_offset > end and not row.txn_index_empty
    ]
    return CompactionJob(
        topic=jobs[0].target.topic,
        topic_id=topic.topic_id,
        partition=partition,
        groups=tuple(jobs),
        tombstone_horizon_ms=options.now_ms - rules.delete_retention_ms,
        segment_bytes=rules.segment_bytes,
        later=tuple(later),
    )


def _epochs_of(group: list[RemoteLogSegment]) -> list[tuple[int, int]]:
    """The group's leader-epoch entries, one per epoch change, from its first base offset."""
    pairs: list[tuple[int, int]] = []
    for row in group:
        for epoch, start in row.leader_epochs:
            if not pairs or pairs[-1][0] != epoch:
                pairs.append((epoch, start))
    return pairs


def _skip(plan: CompactionPlan, reason: str | None) -> bool:
    plan.report.skipped = reason
    return reason is not None


class CompactionRun(TypedDict, total=False):
    """prepare_compaction's keyword arguments, as compact_partition passes them on."""

    owner: Required[str]
    clock: Clock
    dry_run: bool


def compact_partition(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic_id: str,
    partition: int,
    options: CompactionOptions,
    **run: Unpack[CompactionRun],
) -> CompactionReport:
    """Prepare, compact in this process, finalize: the whole compaction of one partition."""
    plan = prepare_compaction(store, rsm, topic_id, partition, options, **run)
    clock = run.get("clock", wall_clock_ms)
    results = {}
    if plan.job is not None:
        try:
            results = {r.segment_id: r for r in run_compaction_job(plan.job, rsm)}
        except BaseException:
            # Ctrl-C or a bug: give the lease back, so no other owner waits out its TTL; the
            # next run removes the STARTED segments as a killed run's.
            if plan.lease is not None:
                release_taking(store, plan.lease)
            raise
    return finalize_compaction(plan, results, store, rsm, clock=clock)
