"""Remote retention of one partition, planned: Kafka's RLMExpirationTask as a pure function.

``plan_remote_retention`` reads nothing and writes nothing: it gets the store's rows, the
leader-epoch lineage, the sizes and configs, and ``now_ms``, and returns which segments to
delete and why. Executing the plan is remote.py's job. Rules (codes as in
docs/kafka-behaviours.md):

* E2/E9: the lineage is the leader-epoch cache without empty epochs, and a segment counts
  only if ``within_lineage`` (isRemoteSegmentWithinLeaderEpochs) accepts it.
* E3: ``retention.bytes`` covers only-local bytes plus the COPY_SEGMENT_FINISHED segments
  inside the lineage; the breach is taken greedily from the oldest segment.
* E4: ``retention.ms`` against each segment's max timestamp. Kafka's 4.0 snapshot deletes at
  ``max_timestamp <= now - retention.ms``; newer trunk uses ``<`` and also requires
  ``now - retention.ms >= 0``. tierflow follows newer trunk: ``<`` is what local retention
  (L3: ``now - largest > retention.ms``) uses, so a segment expires at the same instant in
  both tiers.
* E5: epochs ascending, each epoch's segments by start offset; a log-start-offset breach
  (every epoch <= the first lineage epoch and end < log start) deletes; the scan stops at the
  first segment that is inside the lineage and not breached; invalid ones are skipped.
* E6: the new log start offset is max(end + 1) over segments deleted for time or size only.
  Segments deleted for other reasons never move it: a stale copy or an outside-lineage
  segment can lie above data that is still retained.
* E8: segments whose epochs all predate the earliest cached epoch (an unclean leader election
  or a truncated cache) are deleted; E10 (outside the lineage, epochs not all older) are left.

Where Kafka leaks, tierflow cleans up:

* a segment's bytes count once against retention.bytes (E3b). Kafka counts a finished segment
  below the log start offset in the size total when its epoch is the lineage's first (E9 lets
  any offset through there), deletes it for the log-start breach and keeps its bytes in the
  total, so the size rule deletes as many bytes again: after a DeleteRecords, or after a run
  killed once it had moved the log start, Kafka's rules delete data retention.bytes keeps.
  Here a log-start breach takes its bytes off what is still over the limit, as the time rule
  does;

* every DELETE_SEGMENT_STARTED row is retried, first, wherever it lies (Kafka retries it only
  if the scan reaches it);
* a COPY_SEGMENT_STARTED row older than the grace period while nobody holds an unexpired copy
  lease on the partition is an abandoned copy and is deleted ("stale-copy"). Kafka leaves such
  orphans to the time/size rules (E11), which can count an unreadable upload against
  retention.bytes and move the log start offset over it; tierflow never does either. A
  COPY_SEGMENT_STARTED row that may still be live (lease held, or younger than the grace) is
  Kafka's segmentIdsBeingCopied: the scan stops there (E5a).
* Kafka's leader-epoch cache is truncated at the log start offset (truncateFromStart); the
  broker's checkpoint can lag behind that, so the planner truncates the entries it is given.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Protocol

from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.lifecycle.copy.liveness import copy_attempt_live
from tierflow.metadata.epochs import epochs_from_segments, lineage, within_lineage
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.tierable import policy_deletes

STARTED = RemoteLogSegmentState.COPY_SEGMENT_STARTED.value
FINISHED = RemoteLogSegmentState.COPY_SEGMENT_FINISHED.value
DELETE_STARTED = RemoteLogSegmentState.DELETE_SEGMENT_STARTED.value
DELETE_FINISHED = RemoteLogSegmentState.DELETE_SEGMENT_FINISHED.value

# The states a plan looks at: everything but the DELETE_SEGMENT_FINISHED tombstones.
LIVE_STATES = (
    RemoteLogSegmentState.COPY_SEGMENT_STARTED,
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED,
)

DEFAULT_COPY_GRACE_MS = 3_600_000


class RetentionReason(StrEnum):
    """Why a segment is deleted: the rule that chose it."""

    RETENTION_MS = "retention.ms"  # E4: older than retention.ms
    RETENTION_BYTES = "retention.bytes"  # E3: the oldest bytes over retention.bytes
    LOG_START_OFFSET = "log-start-offset"  # E5e/E8: wholly below the log start offset
    OUTSIDE_LINEAGE = "outside-lineage"  # E8: every epoch older than the cache's first
    RETRY_DELETE = "retry-delete"  # a DELETE_SEGMENT_STARTED row, finished first
    STALE_COPY = "stale-copy"  # an abandoned COPY_SEGMENT_STARTED row


# Only these move the log start offset (E6).
MOVES_LOG_START = frozenset({RetentionReason.RETENTION_MS, RetentionReason.RETENTION_BYTES})


class SegmentRow(Protocol):
    """What planning reads of a segment (only reads): RemoteLogSegment and SegmentSummary fit."""

    segment_id: str
    start_offset: int
    end_offset: int
    max_timestamp_ms: int
    segment_size_bytes: int
    state: str
    created_ms: int
    leader_epochs: list[tuple[int, int]]


class RetainedTopic(Protocol):
    """What planning reads of the topic (only reads): the Topic row fits."""

    name: str
    topic_id: str
    retention_ms: int
    retention_bytes: int
    cleanup_policy: str


@dataclass(frozen=True)
class LogView:
    """What planning knows of the partition's log besides its remote segments: the broker's
    log dir, or its stand-in from the store when there is none (plan_partition_retention).

    ``only_local_bytes``: local segments above the highest remote offset (Kafka's
    onlyLocalLogSegmentsSize). ``leader_epochs``: the leader-epoch-checkpoint entries; None
    rebuilds them from the segments (``epochs_from_segments``).
    """

    log_start_offset: int
    log_end_offset: int
    only_local_bytes: int = 0
    leader_epochs: Sequence[EpochEntry] | None = None


@dataclass(frozen=True)
class PlannedDeletion:
    segment_id: str
    start_offset: int
    end_offset: int
    size_bytes: int
    reason: RetentionReason
    state: str  # the segment's state when planned; execution re-checks it


@dataclass
class RemoteRetentionPlan:
    topic: str
    topic_id: str
    partition: int
    now_ms: int
    log_start_offset: int
    # Set only when it moves forward (E6); advanced before anything is deleted.
    new_log_start_offset: int | None = None
    # Retries first, then the scan's deletions in scan order, then E8, then stale copies.
    deletions: list[PlannedDeletion] = field(default_factory=list)
    # E1's RemoteLogSizeBytes / RemoteLogMetadataCount (newer trunk: FINISHED + DELETE_STARTED).
    remote_log_size_bytes: int = 0
    remote_log_metadata_count: int = 0
    # Where and why the main scan stopped, for the report ("" when it ran out of segments).
    stopped_at: str = ""

    @property
    def total_bytes(self) -> int:
        return sum(d.size_bytes for d in self.deletions)

    @property
    def segment_ids(self) -> list[str]:
        return [d.segment_id for d in self.deletions]

    def by_reason(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for deletion in self.deletions:
            out.setdefault(deletion.reason.value, []).append(deletion.segment_id)
        return out

    def as_dict(self) -> dict:
        return asdict(self)


def truncate_from_start(entries: Sequence[EpochEntry], start_offset: int) -> list[EpochEntry]:
    """LeaderEpochFileCache.truncateFromStart: entries starting at or below ``start_offset``
    collapse into one, the last of them, moved to ``start_offset``."""
    below = [e for e in entries if e.start_offset <= start_offset]
    kept = [e for e in entries if e.start_offset > start_offset]
    if below:
        kept.insert(0, EpochEntry(below[-1].epoch, start_offset))
    return kept


class _Segment:
    """A row with its epochs decoded once; within_lineage reads these two attributes too."""

    __slots__ = ("end_offset", "epochs", "leader_epochs", "row")

    def __init__(self, row: SegmentRow) -> None:
        self.row = row
        self.end_offset = row.end_offset
        self.leader_epochs = row.leader_epochs
        self.epochs = [epoch for epoch, _ in self.leader_epochs]


@dataclass
class _Draft:
    """The plan being built, with what every rule reads: the live rows and the copy lease."""

    plan: RemoteRetentionPlan
    live: list[_Segment]
    copy_lease_live: bool
    copy_grace_ms: int
    planned: set[str] = field(default_factory=set)

    def add(self, segment: _Segment, reason: RetentionReason) -> None:
        row = segment.row
        self.planned.add(row.segment_id)
        self.plan.deletions.append(
            PlannedDeletion(
                row.segment_id,
                row.start_offset,
                row.end_offset,
                row.segment_size_bytes,
                reason,
                row.state,
            )
        )

    def being_copied(self, row: SegmentRow) -> bool:
        """Kafka's segmentIdsBeingCopied: a COPY_SEGMENT_STARTED attempt that may be alive."""
        return copy_attempt_live(
            row.created_ms,
            lease_live=self.copy_lease_live,
            now_ms=self.plan.now_ms,
            grace_ms=self.copy_grace_ms,
        )


@dataclass
class _Lineage:
    """The truncated leader-epoch cache, its lineage, and the live segments under each epoch."""

    entries: list[EpochEntry]
    epoch_starts: dict[int, int]
    by_epoch: dict[int, list[_Segment]]
    log_end_offset: int
    valid: dict[str, bool] = field(default_factory=dict)

    def is_valid(self, segment: _Segment) -> bool:
        """within_lineage, asked once per segment."""
        known = self.valid.get(segment.row.segment_id)
        if known is None:
            known = within_lineage(segment, self.log_end_offset, self.epoch_starts)  # type: ignore[arg-type]
            self.valid[segment.row.segment_id] = known
        return known

    def in_scan_order(self) -> Iterator[_Segment]:
        """Epochs ascending, each epoch's segments by start offset (a segment may recur)."""
        for epoch in sorted(self.by_epoch):
            yield from self.by_epoch[epoch]


def plan_remote_retention(
    topic: RetainedTopic,
    partition: int,
    segments: Sequence[SegmentRow],
    log: LogView,
    *,
    now_ms: int,
    copy_lease_live: bool,
    copy_grace_ms: int = DEFAULT_COPY_GRACE_MS,
) -> RemoteRetentionPlan:
    """Which of the partition's remote segments to delete as of ``now_ms``, and why.

    ``segments``: the partition's rows in any state, ascending start offset (tombstones are
    ignored). ``topic`` gives retention.ms and retention.bytes. ``copy_lease_live``: someone
    holds an unexpired copy lease on the partition. Linear in the number of segments.
    """
    log_start_offset = log.log_start_offset
    plan = RemoteRetentionPlan(topic.name, topic.topic_id, partition, now_ms, log_start_offset)
    live = [_Segment(row) for row in segments if row.state != DELETE_FINISHED]
    draft = _Draft(plan, live, copy_lease_live, copy_grace_ms)
    _count_remote_log(plan, live)
    for segment in live:  # a failed delete is finished first, wherever it lies
        if segment.row.state == DELETE_STARTED:
            draft.add(segment, RetentionReason.RETRY_DELETE)
    epochs = _lineage(live, log)
    retention_ms, retention_bytes = remote_retention_limits(topic)
    remaining = _breached_bytes(live, epochs, log.only_local_bytes, retention_bytes)
    new_start = _scan(draft, epochs, remaining, retention_ms, log_start_offset)
    if epochs.entries:
        _older_than_cache(draft, epochs.entries[0].epoch, log_start_offset)
    _stale_copies(draft)
    if new_start > log_start_offset:
        plan.new_log_start_offset = new_start
    return plan


def remote_retention_limits(topic: RetainedTopic) -> tuple[int, int]:
    """retention.ms and retention.bytes, which apply only when cleanup.policy holds delete
    (Kafka's ``LogConfig.delete``, checked by ``UnifiedLog.deleteOldSegments``): a
    compact-only topic keeps every key's latest record for ever, remote ones too."""
    if policy_deletes(topic.cleanup_policy):
        return topic.retention_ms, topic.retention_bytes
    return -1, -1


def _count_remote_log(plan: RemoteRetentionPlan, live: list[_Segment]) -> None:
    """E1's RemoteLogSizeBytes and RemoteLogMetadataCount."""
    counted = [s.row for s in live if s.row.state in (FINISHED, DELETE_STARTED)]
    plan.remote_log_metadata_count = len(counted)
    plan.remote_log_size_bytes = sum(r.segment_size_bytes for r in counted)


def _lineage(live: list[_Segment], log: LogView) -> _Lineage:
    """E2: the cache truncated at the log start offset, and listRemoteLogSegments per epoch."""
    leader_epochs = log.leader_epochs
    if leader_epochs is None:
        leader_epochs = epochs_from_segments(live)  # type: ignore[arg-type]
    entries = truncate_from_start(leader_epochs, log.log_start_offset)
    epoch_starts = lineage(entries)
    by_epoch: dict[int, list[_Segment]] = {epoch: [] for epoch in epoch_starts}
    for segment in live:  # listRemoteLogSegments(tp, epoch): by start offset, as given
        for epoch in segment.epochs:
            if epoch in by_epoch:
                by_epoch[epoch].append(segment)
    return _Lineage(entries, epoch_starts, by_epoch, log.log_end_offset)


def _scan(
    draft: _Draft, epochs: _Lineage, remaining: int, retention_ms: int, log_start_offset: int
) -> int:
    """E4/E5: the main scan; returns the log start offset its time and size deletions allow."""
    cleanup_until = draft.plan.now_ms - retention_ms if retention_ms > -1 else -1
    time_retention = retention_ms > -1 and cleanup_until >= 0
    first_epoch = min(epochs.epoch_starts) if epochs.epoch_starts else None
    new_start = log_start_offset
    for segment in epochs.in_scan_order():
        row = segment.row
        if row.segment_id in draft.planned:
            continue  # a retry, or listed under an earlier epoch too (E5b, E5d)
        if row.state == STARTED:
            if draft.being_copied(row):
                draft.plan.stopped_at = f"segment {row.segment_id}: being copied"
                return new_start
            continue  # abandoned: deleted below as a stale copy
        if (
            first_epoch is not None
            and segment.epochs[-1] <= first_epoch  # epochs ascend: all of them
            and row.end_offset < log_start_offset
        ):
            draft.add(segment, RetentionReason.LOG_START_OFFSET)  # E5e
            if row.state == FINISHED and epochs.is_valid(segment):  # its bytes count once
                remaining = max(0, remaining - row.segment_size_bytes)
            continue
        if not epochs.is_valid(segment):
            continue  # E5g: skipped without stopping; E10 leaves it
        reason: RetentionReason | None = None
        if time_retention and row.max_timestamp_ms < cleanup_until:
            reason = RetentionReason.RETENTION_MS
            remaining = max(0, remaining - row.segment_size_bytes)
        elif remaining > 0 and remaining - row.segment_size_bytes >= 0:
            reason = RetentionReason.RETENTION_BYTES
            remaining -= row.segment_size_bytes
        if reason is None:
            draft.plan.stopped_at = f"segment {row.segment_id}: retained"
            return new_start
        draft.add(segment, reason)
        new_start = max(new_start, row.end_offset + 1)
    return new_start


def _older_than_cache(draft: _Draft, earliest: int, log_start_offset: int) -> None:
    """E8: segments whose every epoch is older than the earliest cached one."""
    for segment in draft.live:
        row = segment.row
        if row.segment_id in draft.planned or row.state == STARTED:
            continue
        if segment.epochs[-1] < earliest:  # all of them, epochs ascending
            below = row.end_offset < log_start_offset
            draft.add(
                segment,
                RetentionReason.LOG_START_OFFSET if below else RetentionReason.OUTSIDE_LINEAGE,
            )


def _stale_copies(draft: _Draft) -> None:
    """Abandoned COPY_SEGMENT_STARTED attempts, wherever they lie (Kafka leaks them)."""
    for segment in draft.live:
        row = segment.row
        if (
            row.state == STARTED
            and row.segment_id not in draft.planned
            and not draft.being_copied(row)
        ):
            draft.add(segment, RetentionReason.STALE_COPY)


def _breached_bytes(
    live: list[_Segment], epochs: _Lineage, only_local_bytes: int, retention_bytes: int
) -> int:
    """E3: bytes over retention.bytes, counting finished segments inside the lineage."""
    if retention_bytes < 0:
        return 0
    all_finished = sum(s.row.segment_size_bytes for s in live if s.row.state == FINISHED)
    if only_local_bytes + all_finished <= retention_bytes:
        return 0  # newer trunk's short cut: the lineage can only make it smaller
    seen: set[str] = set()
    remote = 0
    for segment in epochs.in_scan_order():
        row = segment.row
        if row.state != FINISHED or row.segment_id in seen:
            continue
        seen.add(row.segment_id)
        if epochs.is_valid(segment):
            remote += row.segment_size_bytes
    return max(0, only_local_bytes + remote - retention_bytes)
