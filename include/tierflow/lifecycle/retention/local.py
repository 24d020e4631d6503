"""Local retention of a tiered partition (Kafka's UnifiedLog.deleteOldSegments, L1-L7).

Thresholds (L1): ``local.retention.ms/bytes`` (-2: the matching ``retention.*``) while remote
storage and copy are enabled, ``retention.ms/bytes`` otherwise. Three passes, Kafka's order:
log-start-offset breach (L7, against the local log start), size (L3: total local size, oldest
first while ``diff - size >= 0``), time (L3: ``now - largest timestamp > retention.ms``). Each
pass takes a prefix from the oldest remaining segment and stops at the first segment that is
not breached or not deletable (L2).

Deletable (L2, stricter): the high watermark is at or above the segment's upper bound (the
next segment's base), it is not the active segment (Kafka would roll it, L4; that is the
broker's job), and its offsets are covered by COPY_SEGMENT_FINISHED remote segments whose
``remote_segment_objects`` rows exist (FINISHED means the objects were verified). Kafka also
accepts "uploaded" by highest remote offset alone or a segment below the log start offset
whose remote copy is gone; tierflow never deletes local data without a finished remote copy,
so such segments are reported as blocked and left to the broker's own retention. Likewise a
topic without remote storage is left entirely to the broker.

Execution (L5, KAFKA-16073): the partition's local log start offset advances first, then the
files go. Only the local start moves: the data still exists remotely, and the expiration task
moves the log start when it deletes the remote copy. Files are removed only with
``delete_files=True``; otherwise nothing changes and the report says what would be freed.
Right before unlinking, each segment's remote copy is checked again. A copy that remote
retention expired since the plan was made (an overlapping run) no longer protects anything once
the log start has moved past the whole segment, so that segment still goes; any other missing
copy stops the run with LocalRetentionError. The report counts only the files this call removed:
of two overlapping runs, each file is deleted, and reported, by one.

Codes like L1 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tierflow.faults import crash_point
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.segment import LogSegment
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore

log = logging.getLogger(__name__)

FINISHED = [RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
LOG_START_REASON = "log-start-offset"
# Segments deleted under a plan being made are rare and few: a handful of passes always do.
PLAN_ATTEMPTS = 8


class LocalRetentionError(RuntimeError):
    """A local segment was about to be deleted without a finished remote copy."""


@dataclass(frozen=True)
class LocalSegmentDeletion:
    base_offset: int
    next_offset: int  # the next segment's base: this segment holds [base_offset, next_offset)
    size_bytes: int  # of the .log file
    reason: str  # "log-start-offset", or the config that was breached
    remote_segment_ids: tuple[str, ...]


@dataclass
class LocalRetentionPlan:
    topic: str
    topic_id: str
    partition: int
    now_ms: int
    retention_ms: int  # effective thresholds (L1); -1 unlimited
    retention_bytes: int
    local_log_start_offset: int
    new_local_log_start_offset: int | None = None
    deletions: list[LocalSegmentDeletion] = field(default_factory=list)
    # A breached segment that may not be deleted yet, and why (copy behind, above HW, ...).
    blocked: list[str] = field(default_factory=list)
    skipped: str | None = None  # the whole partition was not planned, and why

    @property
    def total_bytes(self) -> int:
        return sum(d.size_bytes for d in self.deletions)

    def as_dict(self) -> dict:
        return {**asdict(self), "total_bytes": self.total_bytes}


@dataclass
class LocalRetentionReport:
    """What this call deleted (with a dry run: what it would delete). A file already gone (a
    rerun after a kill, or an overlapping run that got there first) is not counted again."""

    topic: str
    partition: int
    dry_run: bool
    segments: list[int] = field(default_factory=list)  # base offsets whose .log went (or would)
    files: list[str] = field(default_factory=list)
    freed_bytes: int = 0  # every file of those segments, deleted or that would be
    new_local_log_start_offset: int | None = None  # set when this run moved it

    def as_dict(self) -> dict:
        return asdict(self)


def local_retention_limits(topic: Topic) -> tuple[int, int, str]:
    """(retention ms, retention bytes, config prefix) that local retention applies (L1)."""
    config = topic.config
    if config.remote_storage_enable and not config.remote_log_copy_disable:
        return (
            config.effective_local_retention_ms(),
            config.effective_local_retention_bytes(),
            "local.retention",
        )
    return config.retention_ms, config.retention_bytes, "retention"


def plan_local_retention(
    log_: PartitionLog, store: MetadataStore, topic: Topic, *, now_ms: int
) -> LocalRetentionPlan:
    """Which of the partition's oldest local segments may go as of ``now_ms``.

    Planning reads each listed segment's .log; if one is gone by then, another retention run
    (a backfill beside the nightly run) or the broker deleted that segment, whole (the .log
    goes last), so the log is listed and planned again.
    """
    for _ in range(PLAN_ATTEMPTS - 1):
        try:
            return _plan_local_retention(log_, store, topic, now_ms=now_ms)
        except FileNotFoundError as exc:
            log.info(
                "%s-%d: %s went while planning; planning again",
                log_.topic,
                log_.partition,
                exc.filename,
            )
    return _plan_local_retention(log_, store, topic, now_ms=now_ms)


def _plan_local_retention(
    log_: PartitionLog, store: MetadataStore, topic: Topic, *, now_ms: int
) -> LocalRetentionPlan:
    retention_ms, retention_bytes, prefix = local_retention_limits(topic)
    state = store.partition(topic.topic_id, log_.partition)
    local_start = 0 if state is None else state.local_log_start_offset
    plan = LocalRetentionPlan(
        log_.topic,
        topic.topic_id,
        log_.partition,
        now_ms,
        retention_ms,
        retention_bytes,
        local_start,
    )
    if not topic.remote_storage_enable:
        plan.skipped = "remote.storage.enable=false: local retention is the broker's"
        return plan
    if state is None:
        plan.skipped = "partition not in the metadata store (nothing copied yet)"
        return plan
    high_watermark = log_.high_watermark()
    if high_watermark is None:
        plan.skipped = "no high watermark in replication-offset-checkpoint"
        return plan
    segments = log_.segments()
    if len(segments) < 2:
        return plan  # only the active segment
    remote = RemoteCopies.of(store, topic.topic_id, log_.partition)
    log_start = max(state.log_start_offset, log_.log_start_offset())
    local_log_start = max(log_start, local_start)
    chooser = _Chooser(log_, store, segments, remote, high_watermark, plan, log_start)

    chooser.run_pass(LOG_START_REASON, lambda seg, nxt: nxt <= local_log_start)  # L7
    if retention_bytes >= 0:  # L3, size
        total = sum(s.size_in_bytes() for s in segments[chooser.start :])
        if total >= retention_bytes:
            diff = total - retention_bytes

            def size_breached(seg: LogSegment, _next: int) -> bool:
                nonlocal diff
                if diff - seg.size_in_bytes() < 0:
                    return False
                diff -= seg.size_in_bytes()
                return True

            chooser.run_pass(f"{prefix}.bytes", size_breached)
    if retention_ms >= 0:  # L3, time
        chooser.run_pass(
            f"{prefix}.ms", lambda seg, _next: now_ms - seg.largest_timestamp() > retention_ms
        )
    if plan.deletions and plan.deletions[-1].next_offset > local_start:
        plan.new_local_log_start_offset = plan.deletions[-1].next_offset
    return plan


@dataclass(eq=False)
class _Chooser:
    """Kafka's deletableSegments: a prefix, stopping at the first segment that may not go."""

    log_: PartitionLog
    store: MetadataStore
    segments: list[LogSegment]
    remote: RemoteCopies
    high_watermark: int
    plan: LocalRetentionPlan
    log_start: int  # the partition's (not local) log start offset
    start: int = 0
    stopped: bool = False

    def run_pass(self, reason: str, breached: Callable[[LogSegment, int], bool]) -> None:
        while not self.stopped and self.start < len(self.segments):
            segment = self.segments[self.start]
            is_active = self.start == len(self.segments) - 1
            upper = None if is_active else self.segments[self.start + 1].base_offset
            if upper is None or not breached(segment, upper):
                return
            ids, why = self._why_not(segment, upper)
            if why is not None:
                name = segment.log_path.name
                self.plan.blocked.append(f"{name} breaches {reason} but {why}")
                self.stopped = True  # later passes may not skip over it either
                return
            self.plan.deletions.append(
                LocalSegmentDeletion(
                    segment.base_offset, upper, segment.size_in_bytes(), reason, ids
                )
            )
            self.start += 1

    def _why_not(self, segment: LogSegment, upper: int) -> tuple[tuple[str, ...], str | None]:
        if self.high_watermark < upper:
            return (), f"the high watermark {self.high_watermark} is below its end {upper}"
        ids, why = remote_copy_of(self.store, self.remote, segment.base_offset, upper - 1)
        if why is not None and upper <= self.log_start:
            why += (
                "; it is below the log start offset, so remote retention already removed its "
                "copy: left to the broker's own retention (run local retention first)"
            )
        return ids, why


@dataclass(frozen=True)
class RemoteCopies:
    """A partition's FINISHED remote segments by start offset, and which of them have an open
    scrub finding: those protect nothing, so the last good local copy of their offsets stays
    until the scrubber's repair copies it again (lifecycle/scrub/repair.py)."""

    finished: list[RemoteLogSegment]
    flagged: set[str]

    @classmethod
    def of(cls, store: MetadataStore, topic_id: str, partition: int) -> RemoteCopies:
        finished = store.segments(topic_id, partition, states=FINISHED)
        return cls(finished, store.flagged_segment_ids(topic_id, partition))


def remote_copy_of(
    store: MetadataStore, copies: RemoteCopies, first: int, last: int
) -> tuple[tuple[str, ...], str | None]:
    """The trusted FINISHED remote segments covering offsets [first, last], or why there are
    none. Each covering segment must have its object rows."""
    cursor, ids = first, []
    while cursor <= last:
        best, damaged = _covering(copies, cursor)
        if best is None:
            if damaged is not None:
                return (), (
                    f"offset {cursor}'s remote copy, segment {damaged}, has an open scrub "
                    "finding: kept until it is repaired (tierflow scrub --repair)"
                )
            return (), (
                f"offset {cursor} has no {RemoteLogSegmentState.COPY_SEGMENT_FINISHED} "
                "remote copy (copy behind or not run)"
            )
        if not store.segment_objects(best.segment_id):
            return (), f"remote segment {best.segment_id} has no remote_segment_objects rows"
        ids.append(best.segment_id)
        cursor = best.end_offset + 1
    return tuple(ids), None


def _covering(copies: RemoteCopies, offset: int) -> tuple[RemoteLogSegment | None, str | None]:
    """The trusted segment holding ``offset`` that reaches furthest; else a flagged one's id."""
    best, damaged = None, None
    for row in copies.finished:
        if row.start_offset > offset:
            break
        if row.end_offset < offset:
            continue
        if row.segment_id in copies.flagged:
            damaged = damaged or row.segment_id
        elif best is None or row.end_offset > best.end_offset:
            best = row
    return best, damaged


def segment_files(log_: PartitionLog, base_offset: int) -> list[Path]:
    """A segment's files, the .log last: a rerun after a crash still finds and finishes it."""
    segment = LogSegment(base_offset, log_.path)
    return [
        log_.producer_snapshot_path(base_offset),
        segment.txn_index_path,
        segment.time_index_path,
        segment.index_path,
        segment.log_path,
    ]


def execute_local_retention(
    plan: LocalRetentionPlan,
    log_: PartitionLog,
    store: MetadataStore,
    *,
    delete_files: bool,
    actor: str,
    clock: Clock = wall_clock_ms,
) -> LocalRetentionReport:
    """Advance the local log start offset, then delete the planned segments' files.

    ``delete_files=False`` changes nothing and reports what would be freed. Before anything
    moves, and again right before each segment's files are unlinked, its remote copy must be
    COPY_SEGMENT_FINISHED with object rows; otherwise LocalRetentionError names the file.
    """
    if (plan.topic, plan.partition) != (log_.topic, log_.partition):
        raise ValueError(
            f"plan for {plan.topic}-{plan.partition} given the log of {log_.topic}-{log_.partition}"
        )
    report = LocalRetentionReport(plan.topic, plan.partition, dry_run=not delete_files)
    if not delete_files:
        for deletion in plan.deletions:
            report.segments.append(deletion.base_offset)
            for path in segment_files(log_, deletion.base_offset):
                if path.is_file():
                    report.files.append(str(path))
                    report.freed_bytes += path.stat().st_size
        return report
    if not plan.deletions:
        return report

    for deletion in plan.deletions:
        _require_remote_copy(store, plan, log_, deletion)
    if plan.new_local_log_start_offset is not None and store.advance_local_log_start_offset(
        plan.topic_id,
        plan.partition,
        plan.new_local_log_start_offset,
        actor=actor,
        now_ms=clock(),
    ):
        report.new_local_log_start_offset = plan.new_local_log_start_offset
    crash_point("local_retention.after_local_start")
    for deletion in plan.deletions:
        _require_remote_copy(store, plan, log_, deletion)  # right before unlinking
        for path in segment_files(log_, deletion.base_offset):
            size = _unlink(path)
            if size is not None:
                report.files.append(str(path))
                report.freed_bytes += size
                if path.suffix == ".log":
                    report.segments.append(deletion.base_offset)
            crash_point("local_retention.after_file_delete")
        log.info(
            "deleted local segment %s of %s-%d (%s)",
            LogSegment(deletion.base_offset, log_.path).log_path.name,
            plan.topic,
            plan.partition,
            deletion.reason,
        )
    return report


def _unlink(path: Path) -> int | None:
    """Remove one file; its size, or None if it was already gone (then someone else removed
    it: this call's report must not claim it)."""
    try:
        size = path.stat().st_size
        path.unlink()
    except FileNotFoundError:
        return None
    return size


def _require_remote_copy(
    store: MetadataStore,
    plan: LocalRetentionPlan,
    log_: PartitionLog,
    deletion: LocalSegmentDeletion,
) -> None:
    copies = RemoteCopies.of(store, plan.topic_id, plan.partition)
    _, why = remote_copy_of(store, copies, deletion.base_offset, deletion.next_offset - 1)
    if why is None:
        return
    state = store.partition(plan.topic_id, plan.partition)
    if state is not None and deletion.next_offset <= state.log_start_offset:
        # Remote retention (an overlapping run: a backfill beside the nightly run) expired the
        # copy since this plan was made, and moved the log start past the whole segment
        # first: no reader is sent to these offsets in either tier any more.
        return
    path = LogSegment(deletion.base_offset, log_.path).log_path
    raise LocalRetentionError(f"{path}: refusing to delete: {why}")
