"""Segment copy for one partition: Kafka's RLMCopyTask, made resumable and split in three.

1. ``prepare_copy`` (Airflow): take the partition's lease, delete what interrupted attempts
   left, choose the eligible segments (below the last stable offset, as Kafka does), check
   each one (CRCs, indexes, snapshot) and record it as COPY_SEGMENT_STARTED under a fresh
   segment id.
2. ``rewrite_segment`` (Spark or the worker; see rewrite.py): transform and upload, no state.
3. ``finalize_copy`` (Airflow): verify every uploaded object (size, sha256, manifest), record
   COPY_SEGMENT_FINISHED in ascending offset order, which also advances the highest remote
   offset in the same transaction, and release the lease.

Where Kafka leaks, tierflow cleans up. A copy killed between STARTED and FINISHED leaves a
COPY_SEGMENT_STARTED row and maybe some objects; Kafka re-uploads under a new id and leaves the
orphan to retention. Here the lease guarantees no other attempt is alive, so every
COPY_SEGMENT_STARTED (and DELETE_SEGMENT_STARTED) row found by ``prepare_copy`` is deleted
through the regular transitions before copying resumes. A rerun from any point ends in the
state of an uninterrupted run: one FINISHED segment per eligible local segment, no stray
objects.

A rerun under the same owner takes the lease over at once, even from an attempt that is still
alive (two runs of the DAG at once: a backfill, or dag.test, beside the scheduled run). So every
write of an attempt is fenced by its taking of the lease (metadata.partition_registry.Lease):
once taken over, the old attempt can neither start, finish nor delete a segment, and it fails
saying so, while the new one copies those offsets once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypedDict, Unpack

from tierflow.config import DEFAULT_LEASE_TTL_S
from tierflow.faults import crash_point
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.checkpoint import REPLICATION_OFFSET_CHECKPOINT
from tierflow.kafka.cleaner import cleaner_state
from tierflow.kafka.errors import KafkaFormatError, format_error_of
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
from tierflow.lifecycle.copy.lease import PartitionBusyError as PartitionBusyError
from tierflow.lifecycle.copy.lease import release_taking, take_partition_lease
from tierflow.lifecycle.copy.rewrite import (
    SEGMENT_GONE,
    RewriteJob,
    RewriteResult,
    rewrite_segment,
)
from tierflow.lifecycle.copy.segment_facts import SegmentFacts, plan_segment
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.errors import InvalidStateTransition, LeaseLostError
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.models import Topic
from tierflow.metadata.partition_registry import Lease
from tierflow.metadata.states import RemoteLogSegmentState, TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import ObjectInfo, RemoteSegment, RemoteStorageError, RemoteStorageManager

log = logging.getLogger(__name__)

# Read-backs verified at once in finalize: storage round trips overlap (S3) and sha256 runs on
# every core (a local bucket).
VERIFY_THREADS = 8

# What an interrupted attempt leaves: prepare_copy cleans these up under the lease.
UNFINISHED = (
    RemoteLogSegmentState.COPY_SEGMENT_STARTED,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED,
)


class TopicIdMismatchError(ValueError):
    """The log directory's partition.metadata names another topic id than the store."""


class CopyFailedError(RuntimeError):
    """Some segments could not be copied; they were cleaned up and the rerun retries them."""


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
    pending_bytes: int = 0  # and their local log files' total size
    skipped: str | None = None
    # Why copying stops below the high watermark: an open transaction holds the LSO back.
    held_back: str | None = None
    # Why a compacted partition's offsets wait: the log cleaner has not cleaned them yet, or
    # is replacing segments now.
    waiting: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class CopyPlan:
    """What prepare_copy recorded as COPY_SEGMENT_STARTED, in ascending offset order."""

    report: PartitionCopyReport
    jobs: list[RewriteJob] = field(default_factory=list)
    # This attempt's taking of the partition lease, which fences its writes (None: no lease
    # was taken, or a plan serialized before leases had tokens).
    lease: Lease | None = None
    # A segment that failed its checks: the ones before it are copied, then this is raised.
    blocked_by: Exception | None = None

    @property
    def total_bytes(self) -> int:
        return sum(job.size_in_bytes for job in self.jobs)


def prepare_copy(
    log_: PartitionLog,
    store: MetadataStore,
    *,
    rsm: RemoteStorageManager,
    owner: str,
    lease_ttl_s: int = DEFAULT_LEASE_TTL_S,
    clock: Clock = wall_clock_ms,
    dry_run: bool = False,
    max_segments: int | None = None,
    actor: str | None = None,
    holder: LeaseHolder | None = None,
) -> CopyPlan:
    """Clean up, choose and check segments, and mark them COPY_SEGMENT_STARTED.

    On success the caller holds the partition lease until ``finalize_copy`` releases it.
    ``actor`` is recorded as who started each segment (default: ``owner``); an Airflow task
    names its task instance there, since the lease owner must stay the same across runs.
    ``holder``: the process that holds the lease until finalize (a CLI run; lease.py).
    """
    plan = CopyPlan(PartitionCopyReport(log_.topic, log_.partition))
    topic = store.topic(log_.topic)
    upper_bound = _copy_bound(log_, topic, plan.report)
    if upper_bound is None:
        return plan
    segments = log_.segments()
    bounds = _Bounds(segments, upper_bound, max_segments)
    if dry_run:  # writes nothing, not even the partition's first row
        candidates = _candidates(store, topic, log_, bounds, plan.report)
        plan.report.pending = [c.base_offset for c in candidates]
        plan.report.pending_bytes = sum(c.segment.size_in_bytes() for c in candidates)
        return plan
    store.ensure_partition(
        topic.topic_id,
        log_.partition,
        log_start_offset=log_.log_start_offset(),
        local_log_start_offset=segments[0].base_offset if segments else 0,
    )

    crash_point("copy.before_lease")
    plan.lease = lease = take_partition_lease(
        store, topic, log_.partition, owner, lease_ttl_s, clock, holder
    )
    try:
        crash_point("copy.after_lease")
        _start_segments(plan, log_, store, rsm, bounds, actor or owner, clock)
    except BaseException:
        release_taking(store, lease)
        raise
    return plan


@dataclass(frozen=True)
class _Bounds:
    """What copying may take: local segments below ``upper_bound``, ``max_segments`` at most."""

    segments: list[LogSegment]
    upper_bound: int
    max_segments: int | None


def _copy_bound(log_: PartitionLog, topic: Topic, report: PartitionCopyReport) -> int | None:
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
    stable = last_stable_offset(log_, _clamped(log_, high_watermark))
    report.held_back = _held_back(stable)
    if report.held_back:
        log.info("%s-%d: %s", log_.topic, log_.partition, report.held_back)
    return stable.offset


def _clamped(log_: PartitionLog, high_watermark: int) -> int:
    """The high watermark as a broker loading the log takes it: never above the log end
    (UnifiedLog.updateHighWatermark). A checkpoint above the log end (an unclean shutdown that
    lost the tail) is said, naming the file, rather than taken on trust."""
    log_end = log_.log_end_offset()
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
    bounds: _Bounds,
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
    for candidate in _candidates(store, topic, log_, bounds, plan.report):
        facts = _planned(log_, candidate)
        if isinstance(facts, KafkaFormatError):
            # Said once, by whoever catches it when it is raised after the segments before it
            # are copied (a shard task's log, the CLI's line); here only the sequence is noted.
            log.info("%s-%d: stopping at a bad segment: %s", topic.name, log_.partition, facts)
            plan.blocked_by = facts
            return
        plan.jobs.append(
            _start_segment(store, topic, log_.partition, candidate, facts, lease, actor, clock)
        )


def _planned(log_: PartitionLog, candidate: CopyCandidate) -> SegmentFacts | KafkaFormatError:
    try:
        return plan_segment(log_, candidate)
    except KafkaFormatError as exc:
        return exc
    except FileNotFoundError as exc:  # listed a moment ago, deleted by the broker since
        return KafkaFormatError(exc.filename or str(candidate.segment.log_path), None, SEGMENT_GONE)


def _start_segment(
    store: MetadataStore,
    topic: Topic,
    partition: int,
    candidate: CopyCandidate,
    facts: SegmentFacts,
    lease: Lease,
    actor: str,
    clock: Clock,
) -> RewriteJob:
    """One checked candidate recorded COPY_SEGMENT_STARTED under a fresh segment id (one
    insert, fenced by the lease), and the rewrite job that uploads it."""
    segment = RemoteSegment(
        topic.name,
        topic.topic_id,
        partition,
        new_kafka_uuid(),
        candidate.start_offset,
        candidate.end_offset,
    )
    store.add_segment(
        segment_id=segment.segment_id,
        topic_id=topic.topic_id,
        partition=partition,
        start_offset=segment.start_offset,
        end_offset=segment.end_offset,
        max_timestamp_ms=facts.max_timestamp_ms,
        leader_epoch=facts.leader_epoch,
        segment_leader_epochs=[(e.epoch, e.start_offset) for e in facts.leader_epochs],
        segment_size_bytes=facts.size_in_bytes,
        tiered_epoch=topic.tiered_epoch,
        txn_index_empty=facts.txn_index_empty,
        owner=actor,
        actor=actor,
        now_ms=clock(),
        lease=lease,
    )
    crash_point("copy.after_started")
    return RewriteJob.build(segment, facts.data, facts.size_in_bytes)


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
    log_start = max(state.log_start_offset if state else 0, log_.log_start_offset())
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


def finalize_copy(
    plan: CopyPlan,
    results: Mapping[str, RewriteResult],
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    owner: str,
    clock: Clock = wall_clock_ms,
    on_copied: Callable[[CopiedSegment], None] | None = None,
    checks: UploadChecks | None = None,
) -> PartitionCopyReport:
    """Verify each result and record COPY_SEGMENT_FINISHED in offset order; ``checks``: the
    uploads already being verified as they came back (a CLI run), else they are verified here.

    Segments become FINISHED strictly in ascending order, as Kafka copies them: after the first
    one that failed or did not verify, the rest are deleted too (their offsets would leave a
    gap) and CopyFailedError names what went wrong, so the task fails and its retry resumes.
    A segment that failed its checks in prepare_copy is raised last, after the ones before it
    are FINISHED.
    """
    report = plan.report
    if not plan.jobs:
        release_plan(store, plan, owner)
        if plan.blocked_by is not None:
            raise plan.blocked_by
        return report
    topic = store.topic(report.topic)
    failed: tuple[RewriteJob, str] | None = None
    verdicts = _verdicts(plan.jobs, results, rsm, checks)
    try:
        for job in plan.jobs:
            row = store.segment(job.segment_id)
            if failed is None and row.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
                _record_copied(report, job, on_copied)  # a rerun of a finalize that got here
                continue
            failure = failed[1] if failed else _not_finished(job, row.state, verdicts)
            if failure is None:
                failure = _finish(job, results[job.segment_id], store, owner, plan.lease, clock)
            if failure is not None:
                failed = failed or (job, failure)
                _discard(store, rsm, topic, job, owner, clock)
                continue
            _record_copied(report, job, on_copied)
            log.info("copied %s-%d offsets %d-%d (%d bytes) as segment %s", *_said(job))
    finally:
        release_plan(store, plan, owner)
    if failed is not None:
        raise _failure_of(*failed, results)
    if plan.blocked_by is not None:
        raise plan.blocked_by
    return report


def _not_finished(job: RewriteJob, state: str, verdicts: Mapping[str, str | None]) -> str | None:
    """Why the job cannot be FINISHED: its row moved on, or its upload did not verify."""
    if state != RemoteLogSegmentState.COPY_SEGMENT_STARTED:
        return _no_longer_copied(job, state)
    return verdicts[job.segment_id]


def _said(job: RewriteJob) -> tuple:
    return (
        job.topic,
        job.partition,
        job.start_offset,
        job.end_offset,
        job.size_in_bytes,
        job.segment_id,
    )


def _failure_of(job: RewriteJob, failure: str, results: Mapping[str, RewriteResult]) -> Exception:
    """What finalize raises for the first segment that failed: its bad input, as the scan
    found it (the file and byte named, of its own class), or CopyFailedError."""
    result = results.get(job.segment_id)
    if result is not None and result.refused is not None and failure == result.error:
        return format_error_of(result.refused)
    return CopyFailedError(failure)


class CopyOptions(TypedDict, total=False):
    """prepare_copy's options, as copy_partition passes them on."""

    lease_ttl_s: int
    clock: Clock
    dry_run: bool


def copy_partition(
    log_: PartitionLog,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    owner: str,
    on_copied: Callable[[CopiedSegment], None] | None = None,
    progress: Progress = NO_PROGRESS,
    **options: Unpack[CopyOptions],
) -> PartitionCopyReport:
    """Prepare, rewrite in this process, finalize: the whole copy of one partition.

    ``progress`` hears of the segments and bytes planned (``add_total``: no dry run is needed
    to size a bar, and one sized from a dry run's ``pending_bytes`` would count them twice)
    and of each upload as it ends, which is when the time goes; ``on_copied`` follows once
    each is FINISHED. A dry run reports nothing to ``progress``: it does no work.
    """
    plan = prepare_copy(log_, store, rsm=rsm, owner=owner, **options)
    if options.get("dry_run", False) or plan.report.skipped:
        return plan.report
    progress.add_total(len(plan.jobs), plan.total_bytes)
    results = {}
    for job in plan.jobs:
        progress.note(f"{job.topic}-{job.partition} {Path(job.log_segment).name}")
        results[job.segment_id] = rewrite_segment(job, rsm)
        progress.advance(1, job.size_in_bytes)
        crash_point("copy.after_upload")
    clock = options.get("clock", wall_clock_ms)
    return finalize_copy(plan, results, store, rsm, owner=owner, clock=clock, on_copied=on_copied)


def _finish(
    job: RewriteJob,
    result: RewriteResult,
    store: MetadataStore,
    owner: str,
    lease: Lease | None,
    clock: Clock,
) -> str | None:
    """Record COPY_SEGMENT_FINISHED with the verified objects; why not, if it was too late."""
    crash_point("copy.before_finished")
    try:
        store.transition_segment(
            job.segment_id,
            RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
            actor=owner,
            now_ms=clock(),
            objects=object_rows(result.objects),
            lease=lease,
            scanned=result.scanned,
        )
    except (InvalidStateTransition, LeaseLostError):
        return _no_longer_copied(job, store.segment(job.segment_id).state)
    crash_point("copy.after_finished")
    return None


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


def _no_longer_copied(job: RewriteJob, state: str) -> str:
    """A run of the same owner (a later or overlapping run of the DAG) took the partition's
    lease over: it removes this attempt as abandoned and copies those offsets itself."""
    return (
        f"{job.segment.describe()}: is {state}, no longer being copied (another copy of the "
        "partition took its lease over)"
    )


def _discard(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    job: RewriteJob,
    owner: str,
    clock: Clock,
) -> None:
    """Remove an attempt that will not finish, objects included.

    Its segment id belongs to this attempt alone, so whatever is stored under it may go, even
    when another copy already recorded it deleted: this attempt's rewrite may have uploaded
    after that copy deleted the objects.
    """
    row = store.segment(job.segment_id)
    if row.state in UNFINISHED:
        delete_remote_segment(store, rsm, topic, row, actor=owner, now_ms=clock())
    elif row.state == RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
        rsm.delete_log_segment_data(job.segment)


def _record_copied(
    report: PartitionCopyReport,
    job: RewriteJob,
    on_copied: Callable[[CopiedSegment], None] | None,
) -> None:
    copied = CopiedSegment(job.segment_id, job.start_offset, job.end_offset, job.size_in_bytes)
    report.copied.append(copied)
    if on_copied:
        on_copied(copied)


class UploadChecks:
    """Each upload read back and verified in threads (mostly waiting on reads and sha256,
    which let go of the GIL): as soon as its result comes back, while the rewrite goes on, or
    all at once in finalize. FINISHED still follows in offset order."""

    def __init__(self, rsm: RemoteStorageManager) -> None:
        self._rsm = rsm
        self._pool = ThreadPoolExecutor(VERIFY_THREADS, thread_name_prefix="verify")
        self._pending: dict[str, Future[str | None]] = {}

    def __enter__(self) -> UploadChecks:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._pool.shutdown(cancel_futures=True)

    def check(self, job: RewriteJob, result: RewriteResult | None) -> None:
        """Start verifying ``result``'s upload now."""
        self._pending[job.segment_id] = self._pool.submit(_verify_result, job, result, self._rsm)

    def verdicts(
        self, jobs: Sequence[RewriteJob], results: Mapping[str, RewriteResult]
    ) -> dict[str, str | None]:
        """Every job's verdict: None when its upload verified, else why not."""
        for job in jobs:
            if job.segment_id not in self._pending:
                self.check(job, results.get(job.segment_id))
        return {job.segment_id: self._pending.pop(job.segment_id).result() for job in jobs}


def _verdicts(
    jobs: Sequence[RewriteJob],
    results: Mapping[str, RewriteResult],
    rsm: RemoteStorageManager,
    checks: UploadChecks | None,
) -> dict[str, str | None]:
    if checks is not None:
        return checks.verdicts(jobs, results)
    with UploadChecks(rsm) as own:
        return own.verdicts(jobs, results)


def _verify_result(
    job: RewriteJob, result: RewriteResult | None, rsm: RemoteStorageManager
) -> str | None:
    if result is None:
        return f"{job.segment.describe()}: no result from the rewrite job"
    if result.error:
        return result.error
    try:
        rsm.verify(job.segment, result.objects)
    except RemoteStorageError as exc:
        return f"{job.segment.describe()}: {exc}"
    return None


def release_plan(store: MetadataStore, plan: CopyPlan, owner: str) -> None:
    if plan.report.skipped:
        return
    if plan.lease is not None:
        release_taking(store, plan.lease)
        return
    topic = store.topic(plan.report.topic)  # a plan from before leases had tokens
    store.release_lease(topic.topic_id, plan.report.partition, owner)


def object_rows(objects: Sequence[ObjectInfo]) -> list[tuple[str, str, int, str | None]]:
    """A segment's uploaded objects as COPY_SEGMENT_FINISHED stores them: (kind, key, size,
    sha256), the kind being the key's suffix."""
    return [(o.key.rsplit(".", 1)[-1], o.key, o.size, o.sha256) for o in objects]


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
