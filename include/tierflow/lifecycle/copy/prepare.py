"""Step 1 of a partition's copy (steps.py): take the partition's lease, delete what
interrupted attempts left, choose the eligible segments (below the last stable offset, as Kafka
does), plan each one (files, indexes, epochs; its batches are checked as they are uploaded) and
record it COPY_SEGMENT_STARTED under a fresh segment id, fenced by the lease.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from tierflow.config import default
from tierflow.faults import crash_point
from tierflow.kafka.checkpoint import REPLICATION_OFFSET_CHECKPOINT
from tierflow.kafka.cleaner import cleaner_state
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.last_stable_offset import StableOffset, last_stable_offset
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.segment import LogSegment
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.copy.candidates import (
    CopyCandidate,
    candidate_segments,
    copy_start_offset,
    past_the_remote_end,
)
from tierflow.lifecycle.copy.compacted import compacted_candidates
from tierflow.lifecycle.copy.lease import partition_lease, release_taking
from tierflow.lifecycle.copy.plan import (
    UNFINISHED,
    CopyPlan,
    PartitionCopyReport,
    TopicIdMismatchError,
)
from tierflow.lifecycle.copy.rewrite import SEGMENT_GONE, RewriteJob
from tierflow.lifecycle.copy.segment_facts import SegmentFacts, plan_segment
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.lifecycle.started import fresh_segment, started_segment
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.models import Topic
from tierflow.metadata.partition_registry import Lease
from tierflow.metadata.segment_store import StartedSegment
from tierflow.metadata.states import TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CopyOwner:
    """Who copies a partition, and how it holds the partition's copy lease: ``name`` is the
    lease owner (the same across a task's retries, so a rerun takes the lease over at once),
    ``lease_ttl_s`` how long a lease left behind blocks other owners, ``holder`` the process
    holding it until finalize (a CLI run; lease.py)."""

    name: str
    lease_ttl_s: int = default("copy_lease_ttl_s")
    holder: LeaseHolder | None = None


def prepare_copy(
    log_: PartitionLog,
    store: MetadataStore,
    *,
    rsm: RemoteStorageManager,
    owner: CopyOwner,
    clock: Clock = wall_clock_ms,
    dry_run: bool = False,
    max_segments: int | None = None,
    actor: str | None = None,
) -> CopyPlan:
    """Clean up, choose and check segments, and mark them COPY_SEGMENT_STARTED.

    On success the caller holds the partition lease until ``finalize_copy`` releases it.
    ``actor`` is recorded as who started each segment (default: the owner's name); an Airflow
    task names its task instance there, since the lease owner must stay the same across runs.
    """
    plan = CopyPlan(PartitionCopyReport(log_.topic, log_.partition))
    topic = store.topic(log_.topic)
    segments = log_.segments()
    upper_bound = _copy_bound(log_, segments, topic, plan.report)
    if upper_bound is None:
        return plan
    bounds = _Bounds(segments, upper_bound, max_segments)
    if dry_run:  # writes nothing, not even the partition's first row
        candidates = _candidates(store, topic, log_, bounds, plan.report)
        plan.report.pending = [c.base_offset for c in candidates]
        plan.report.pending_bytes = sum(c.segment.size_in_bytes() for c in candidates)
        return plan
    store.ensure_partition(
        topic.topic_id,
        log_.partition,
        log_start_offset=log_.log_start_offset(segments),
        local_log_start_offset=segments[0].base_offset if segments else 0,
    )

    crash_point("copy.before_lease")
    with partition_lease(
        store, topic, log_.partition, owner.name, owner.lease_ttl_s, clock, owner.holder
    ) as lease:
        plan.lease = lease
        crash_point("copy.after_lease")
        chosen = _Chosen(lambda topic: _candidates(store, topic, log_, bounds, plan.report))
        _start_segments(plan, log_, store, rsm, chosen, actor or owner.name, clock)
    return plan


def prepare_recopy(
    log_: PartitionLog,
    store: MetadataStore,
    *,
    rsm: RemoteStorageManager,
    owner: CopyOwner,
    candidate: CopyCandidate,
    clock: Clock = wall_clock_ms,
) -> CopyPlan:
    """``prepare_copy`` for one chosen local segment whose offsets are remote already (the
    scrubber's repair of a damaged copy): the same lease, clean-up, checks and fresh segment
    id, without the rules that choose what is copied next. Finalize as any plan."""
    plan = CopyPlan(PartitionCopyReport(log_.topic, log_.partition))
    topic = store.topic(log_.topic)
    _check_topic_id(log_, topic)
    with partition_lease(
        store, topic, log_.partition, owner.name, owner.lease_ttl_s, clock, owner.holder
    ) as lease:
        plan.lease = lease
        _start_segments(
            plan, log_, store, rsm, _Chosen(lambda _topic: [candidate]), owner.name, clock
        )
    return plan


@dataclass(frozen=True)
class _Chosen:
    """What a plan copies, chosen under the lease from the topic as read then."""

    of: Callable[[Topic], list[CopyCandidate]]


@dataclass(frozen=True)
class _Bounds:
    """What copying may take: local segments below ``upper_bound``, ``max_segments`` at most."""

    segments: list[LogSegment]
    upper_bound: int
    max_segments: int | None


def _copy_bound(
    log_: PartitionLog, segments: list[LogSegment], topic: Topic, report: PartitionCopyReport
) -> int | None:
    """The last stable offset, below which segments are copied; None when the partition is
    not copied at all, ``report.skipped`` saying why."""
    report.skipped = _not_copyable(topic)
    if report.skipped:
        return None
    _check_topic_id(log_, topic)
    high_watermark = log_.high_watermark()
    if high_watermark is None:
        report.skipped = "no high watermark in replication-offset-checkpoint"
        return None
    active = segments[-1].base_offset if segments else None  # never copied: no LSO needed there
    bound = _clamped(log_, segments, high_watermark)
    stable = last_stable_offset(log_, bound, needed_below=active, segments=segments)
    report.held_back = _held_back(stable)
    if report.held_back:
        log.info("%s-%d: %s", log_.topic, log_.partition, report.held_back)
    return stable.offset


def _clamped(log_: PartitionLog, segments: list[LogSegment], high_watermark: int) -> int:
    """The high watermark as a broker loading the log takes it: never above the log end
    (UnifiedLog.updateHighWatermark). A checkpoint above the log end (an unclean shutdown that
    lost the tail) is said, naming the file, rather than taken on trust."""
    log_end = log_.log_end_offset(segments)
    if high_watermark <= log_end:
        return high_watermark
    log.warning(
        "%s: %s-%d: high watermark %d is above the log end %d; taken as %d, as a broker would",
        log_.log_dir.path / REPLICATION_OFFSET_CHECKPOINT,
        log_.topic,
        log_.partition,
        high_watermark,
        log_end,
        log_end,
    )
    return log_end


def _start_segments(
    plan: CopyPlan,
    log_: PartitionLog,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    chosen: _Chosen,
    actor: str,
    clock: Clock,
) -> None:
    """Under the lease: clean up, then record each checked candidate as COPY_SEGMENT_STARTED,
    stopping at the first that fails its checks."""
    lease = plan.lease
    assert lease is not None, "taken by prepare_copy"
    # Read again under the lease what the plan rests on: until we held it, another copy
    # could finish these very segments, or a disablement begin.
    topic = store.topic(log_.topic)
    plan.report.skipped = _not_copyable(topic)
    if plan.report.skipped:
        release_taking(store, lease)
        return
    plan.report.cleaned_up = clean_up_abandoned(store, rsm, topic, lease, clock)
    # Every candidate is planned (files, indexes, epochs) before any state is written for it;
    # its batches are checked as they are uploaded.
    planned = []
    for candidate in chosen.of(topic):
        facts = _planned(log_, candidate)
        if isinstance(facts, KafkaFormatError):
            # Said once, by whoever catches it when it is raised after the segments before it
            # are copied (a shard task's log, the CLI's line); here only the sequence is noted.
            log.info("%s-%d: stopping at a bad segment: %s", topic.name, log_.partition, facts)
            plan.blocked_by = facts
            break
        planned.append(_job_of(topic, log_.partition, candidate, facts))
    store.start_segments(
        [started for started, _job in planned], actor=actor, now_ms=clock(), lease=lease
    )
    for _started, job in planned:
        plan.jobs.append(job)
        crash_point("copy.after_started")


def _planned(log_: PartitionLog, candidate: CopyCandidate) -> SegmentFacts | KafkaFormatError:
    try:
        return plan_segment(log_, candidate)
    except KafkaFormatError as exc:
        return exc
    except FileNotFoundError as exc:  # listed a moment ago, deleted by the broker since
        return KafkaFormatError(exc.filename or str(candidate.segment.log_path), None, SEGMENT_GONE)


def _job_of(
    topic: Topic, partition: int, candidate: CopyCandidate, facts: SegmentFacts
) -> tuple[StartedSegment, RewriteJob]:
    """A planned candidate under a fresh segment id: its COPY_SEGMENT_STARTED row (all of a
    partition's go in one transaction, fenced by the lease) and the job that uploads it."""
    segment = fresh_segment(topic.name, topic.topic_id, partition, candidate)
    started = started_segment(
        segment,
        facts,
        txn_index_empty=facts.txn_index_empty,
        leader_epoch=facts.leader_epoch,
        tiered_epoch=topic.tiered_epoch,
    )
    return started, RewriteJob.build(segment, facts.data, facts.size_in_bytes)


def _candidates(
    store: MetadataStore,
    topic: Topic,
    log_: PartitionLog,
    bounds: _Bounds,
    report: PartitionCopyReport,
) -> list[CopyCandidate]:
    """The eligible segments as of the partition's row now (see copy_candidates; for a
    compacted topic, compacted.py's rules on top); a partition with no row yet (a dry run
    before its first copy) has nothing remote."""
    state = store.partition(topic.topic_id, log_.partition)
    log_start = max(state.log_start_offset if state else 0, log_.log_start_offset(bounds.segments))
    # The partition's highest remote offset only moves forward, like Kafka's
    # highestOffsetForEpoch: deleting remote segments never makes them eligible again.
    from_offset = copy_start_offset(state.highest_remote_offset if state else -1, log_start)
    if topic.config.compacted:
        plan = compacted_candidates(
            bounds.segments,
            from_offset=from_offset,
            upper_bound=bounds.upper_bound,
            cleaner=cleaner_state(log_),
        )
        candidates, report.waiting = plan.candidates, plan.waiting
        if report.waiting:
            log.info("%s-%d: %s", log_.topic, log_.partition, report.waiting)
    else:
        found = candidate_segments(
            bounds.segments, from_offset=from_offset, upper_bound=bounds.upper_bound
        )
        candidates = past_the_remote_end(found, state.highest_remote_offset if state else -1)
    return candidates[: bounds.max_segments] if bounds.max_segments else candidates


def _held_back(stable: StableOffset) -> str | None:
    """Kafka copies below the last stable offset only; say so when that is below the HW."""
    if not stable.held_back:
        return None
    if stable.open_transaction_producer is not None:
        why = f"producer {stable.open_transaction_producer}'s transaction is still open"
    else:
        why = f"a batch could not be read ({stable.unreadable})"
    return (
        f"last stable offset {stable.offset} is below the high watermark "
        f"{stable.high_watermark}: {why}"
    )


def _not_copyable(topic: Topic) -> str | None:
    if not topic.copied_by_tierflow:
        return "the brokers copy it (handed over, or followed)"
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


def clean_up_abandoned(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    lease: Lease,
    clock: Clock,
) -> list[str]:
    """Delete what interrupted attempts left: safe because we hold the partition lease (each
    DELETE_SEGMENT_STARTED is fenced by it, in case another attempt takes it over meanwhile)."""
    owner, partition = lease.owner, lease.partition
    cleaned = []
    for row in store.segments(topic.topic_id, partition, states=UNFINISHED):
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
        if delete_remote_segment(
            store, rsm, topic, row, actor=owner, now_ms=clock(), abandoned=True, lease=lease
        ):
            cleaned.append(row.segment_id)
    return cleaned
