"""Orphan reconciliation: compare the bucket with the metadata store, and fix what is safe.

Beyond Kafka, which has no such check: it answers the commonest complaint about tiered storage,
"the bucket holds data nothing points to" (and its worse twin, "metadata points to nothing").
``plan_reconcile`` only reads; it finds

* ``orphan-object``: a key under the storage prefix that no live segment row names (rows in
  COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED or DELETE_SEGMENT_STARTED). Objects named only
  by a DELETE_SEGMENT_FINISHED tombstone, or lying outside every registered partition, are
  orphans too. Only those older than the object grace period are deleted: a copy in flight
  names its objects before it uploads them, but listings and clocks lag.
* ``stale-copy``: COPY_SEGMENT_STARTED with no live attempt, by retention's rule: nobody holds
  an unexpired copy lease on the partition and the row is older than the row grace.
* ``stale-delete``: DELETE_SEGMENT_STARTED whose delete started longer ago than the row grace.
* ``missing-object`` / ``size-mismatch``: a COPY_SEGMENT_FINISHED segment whose recorded
  objects are absent or have another size. These are data loss: always report-only. Dropping
  the metadata would only hide the loss from readers and on-call.

Partitions whose removal is pending (DELETE_PARTITION_MARKED or STARTED) belong to
partition_removal.py: they are skipped, with one informational finding each.

``apply_reconcile`` acts on the actionable findings only, re-checking each right before it
acts (a copy may have started, or a delete finished, since planning): orphans are stat'ed
and looked up again, stale rows go through ``delete_remote_segment`` (the state machine, with
events). A failure is recorded for its finding and the others continue.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple

from sqlalchemy import select
from sqlmodel import col

from tierflow.faults import crash_point
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.errors import InvalidStateTransition, UnknownSegmentError, UnknownTopicError
from tierflow.metadata.models import Partition, RemoteLogSegment, RemoteSegmentObject, Topic
from tierflow.metadata.segment_store import SegmentSummary
from tierflow.metadata.states import RemoteLogSegmentState, RemotePartitionDeleteState
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.storage.keys import normalize_prefix, partition_prefix
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.remote_storage_manager import RemoteStorageManager

__all__ = [
    "Action",
    "Finding",
    "FindingKind",
    "Outcome",
    "ReconcilePlan",
    "ReconcileReport",
    "Result",
    "apply_reconcile",
    "copy_attempt_live",
    "copy_lease_live",
    "human_duration",
    "plan_reconcile",
    "reconcile_summary",
    "why_kept",
]

log = logging.getLogger(__name__)

_S = RemoteLogSegmentState
LIVE_STATES = (_S.COPY_SEGMENT_STARTED, _S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED)
_LIVE_NAMES = frozenset(state.value for state in LIVE_STATES)
PENDING_REMOVAL = (
    RemotePartitionDeleteState.DELETE_PARTITION_MARKED,
    RemotePartitionDeleteState.DELETE_PARTITION_STARTED,
)
# ``<20-digit start offset>-<22-character segment id>.<suffix>``: keys.segment_key's file name.
_SEGMENT_FILE = re.compile(r"^(?P<stem>\d{20}-(?P<segment_id>[A-Za-z0-9_-]{22}))\.[^/]+$")


class FindingKind(StrEnum):
    ORPHAN_OBJECT = "orphan-object"
    STALE_COPY = "stale-copy"
    STALE_DELETE = "stale-delete"
    MISSING_OBJECT = "missing-object"
    SIZE_MISMATCH = "size-mismatch"
    # Informational: the partition remover owns this partition; nothing in it was checked.
    PARTITION_BEING_REMOVED = "partition-being-removed"


DATA_LOSS_KINDS = frozenset({FindingKind.MISSING_OBJECT, FindingKind.SIZE_MISMATCH})
INFORMATIONAL_KINDS = frozenset({FindingKind.PARTITION_BEING_REMOVED})


class Action(StrEnum):
    DELETE_OBJECT = "delete-object"
    FINISH_DELETE = "finish-delete"
    DELETE_STALE_COPY = "delete-stale-copy"
    REPORT_ONLY = "report-only"


@dataclass(frozen=True)
class Finding:
    """One anomaly (or one skipped partition), and what apply would do about it."""

    kind: FindingKind
    action: Action
    actionable: bool  # apply acts on it: old enough, and not report-only
    message: str
    topic: str | None = None  # the Kafka name; None for a key outside every known topic
    topic_id: str | None = None
    partition: int | None = None
    key: str | None = None
    segment_id: str | None = None
    size: int | None = None  # bytes: the object's, or the segment's for a row finding
    age_ms: int | None = None  # None when the bucket reports no modification time

    @property
    def is_anomaly(self) -> bool:
        return self.kind not in INFORMATIONAL_KINDS

    @property
    def data_loss(self) -> bool:
        return self.kind in DATA_LOSS_KINDS

    @property
    def where(self) -> str:
        """``topic-partition``, or ``-`` for a key outside every registered partition."""
        if self.topic is None:
            return "-"
        return self.topic if self.partition is None else f"{self.topic}-{self.partition}"

    @property
    def subject(self) -> str:
        """The object key, or the segment for a row finding."""
        if self.key is not None:
            return self.key
        return f"segment {self.segment_id}" if self.segment_id else self.where

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "kind": self.kind.value, "action": self.action.value}


@dataclass
class ReconcilePlan:
    prefix: str  # normalized storage prefix
    now_ms: int
    object_grace_ms: int
    row_grace_ms: int
    findings: list[Finding] = field(default_factory=list)
    partitions_checked: int = 0
    objects_listed: int = 0

    @property
    def anomalies(self) -> list[Finding]:
        return [f for f in self.findings if f.is_anomaly]

    @property
    def actionable(self) -> list[Finding]:
        return [f for f in self.findings if f.actionable]

    @property
    def data_loss(self) -> list[Finding]:
        return [f for f in self.findings if f.data_loss]

    def counts(self) -> dict[str, int]:
        """Findings per kind, every kind present (zeros included) so reports line up."""
        out = {kind.value: 0 for kind in FindingKind}
        for finding in self.findings:
            out[finding.kind.value] += 1
        return out


class Result(StrEnum):
    FIXED = "fixed"
    ALREADY_DONE = "already-done"  # someone else fixed it between planning and now
    SKIPPED = "skipped"  # the re-check says it is no longer safe to act; see the detail
    FAILED = "failed"
    KEPT = "kept"  # not actionable (too young, or report-only): left untouched


@dataclass(frozen=True)
class Outcome:
    finding: Finding
    result: Result
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {**self.finding.as_dict(), "result": self.result.value, "detail": self.detail}


@dataclass
class ReconcileReport:
    actor: str
    outcomes: list[Outcome] = field(default_factory=list)

    def with_result(self, *results: Result) -> list[Outcome]:
        return [o for o in self.outcomes if o.result in results]

    @property
    def fixed(self) -> list[Outcome]:
        return self.with_result(Result.FIXED)

    @property
    def failed(self) -> list[Outcome]:
        return self.with_result(Result.FAILED)

    @property
    def remaining(self) -> list[Outcome]:
        """Anomalies still there after this run: kept, skipped or failed."""
        settled = (Result.FIXED, Result.ALREADY_DONE)
        return [o for o in self.outcomes if o.finding.is_anomaly and o.result not in settled]

    def as_dict(self) -> dict[str, Any]:
        tally = {result.value: len(self.with_result(result)) for result in Result}
        return {"actor": self.actor, "results": tally, "failed": [o.as_dict() for o in self.failed]}


# -- liveness: retention's "no live attempt", shared ------------------------------------------


def copy_lease_live(partition: Partition | None, now_ms: int) -> bool:
    """Someone holds an unexpired copy lease on the partition (retention.py's rule)."""
    return (
        partition is not None
        and partition.lease_owner is not None
        and partition.lease_expires_ms is not None
        and partition.lease_expires_ms > now_ms
    )


def copy_attempt_live(created_ms: int, *, lease_live: bool, now_ms: int, grace_ms: int) -> bool:
    """A COPY_SEGMENT_STARTED row may still be copied (Kafka's segmentIdsBeingCopied, as
    retention_plan judges it): a lease is held on its partition, or it is younger than the
    grace period."""
    return lease_live or now_ms - created_ms < grace_ms


# -- planning ---------------------------------------------------------------------------------


class _Recorded(NamedTuple):
    """An object row of a COPY_SEGMENT_FINISHED segment."""

    segment_id: str
    kind: str
    size: int


@dataclass
class _Partition:
    """What planning knows of one registered partition while it scans its prefix."""

    topic: Topic
    name: str  # the Kafka name (a retired row's keys still use it)
    row: Partition
    where: str  # its partition prefix

    @property
    def number(self) -> int:
        return self.row.partition


def plan_reconcile(
    store: MetadataStore,
    objects: ObjectStore,
    *,
    prefix: str,
    now_ms: int,
    object_grace_ms: int,
    row_grace_ms: int,
    topics: Iterable[str] | None = None,
) -> ReconcilePlan:
    """Compare the bucket under ``prefix`` with the store; change nothing.

    Each registered partition's prefix is listed once (one partition's expected keys in memory
    at a time); then the whole prefix is listed for keys outside every registered partition.
    ``topics`` (Kafka names) narrows both to those topics.
    """
    if object_grace_ms < 0 or row_grace_ms < 0:
        raise ValueError("grace periods must not be negative")
    plan = ReconcilePlan(normalize_prefix(prefix), now_ms, object_grace_ms, row_grace_ms)
    chosen = _chosen_topics(store, topics)
    known: set[str] = set()
    for topic in chosen:
        for scan in _partitions(store, topic, prefix):
            known.add(scan.where)
            _plan_partition(plan, store, objects, scan)
            plan.partitions_checked += 1
    scopes = [plan.prefix] if topics is None else [_topic_dir(plan.prefix, t) for t in chosen]
    topic_dirs = {_topic_dir(plan.prefix, t): t for t in store.topics()}
    for scope in scopes:
        for key in objects.list(scope):
            if _partition_dir(key, plan.prefix) in known:
                continue  # its partition's scan judged it
            plan.objects_listed += 1
            _add_orphan(plan, objects, key, _unregistered_place(key, plan.prefix, topic_dirs))
    return plan


def _chosen_topics(store: MetadataStore, names: Iterable[str] | None) -> list[Topic]:
    """Every topic row (retired ones too: their data is still keyed), or those named."""
    topics = store.topics()
    if names is None:
        return topics
    wanted = set(names)
    chosen = [t for t in topics if kafka_topic_name(t.name) in wanted]
    missing = wanted - {kafka_topic_name(t.name) for t in chosen}
    if missing:
        raise UnknownTopicError(f"unknown topic(s): {', '.join(sorted(missing))}")
    return chosen


def _partitions(store: MetadataStore, topic: Topic, prefix: str) -> Iterator[_Partition]:
    name = kafka_topic_name(topic.name)
    for row in store.partitions(topic.topic_id):
        where = partition_prefix(prefix, name, topic.topic_id, row.partition)
        yield _Partition(topic, name, row, where)


def _topic_dir(prefix: str, topic: Topic) -> str:
    return f"{prefix}{kafka_topic_name(topic.name)}-{topic.topic_id}/"


def _partition_dir(key: str, prefix: str) -> str | None:
    """``<prefix><topic>-<id>/<partition>/`` of a key, or None when it has no such shape."""
    parts = key[len(prefix) :].split("/")
    if len(parts) < 3:
        return None
    return f"{prefix}{parts[0]}/{parts[1]}/"


def _plan_partition(
    plan: ReconcilePlan, store: MetadataStore, objects: ObjectStore, scan: _Partition
) -> None:
    removal = store.partition_delete(scan.topic.topic_id, scan.number)
    if removal is not None and removal.delete_state in PENDING_REMOVAL:
        _skip_partition(plan, objects, scan, removal.state)
        return
    live = store.segment_summaries(scan.topic.topic_id, scan.number, states=LIVE_STATES)
    named = {_stem(row.start_offset, row.segment_id) for row in live}
    finished = {r.segment_id: r for r in live if r.state == _S.COPY_SEGMENT_FINISHED.value}
    recorded = _finished_objects(store, scan.topic.topic_id, scan.number)
    seen: set[str] = set()
    for key in objects.list(scan.where):
        plan.objects_listed += 1
        if key in recorded:
            seen.add(key)
            _check_recorded(plan, store, objects, scan, key, recorded[key], finished)
        elif _stem_in(key, scan.where) not in named:
            place = _orphan_place(store, scan, key)
            if place is not None:
                _add_orphan(plan, objects, key, place)
    for key in sorted(recorded.keys() - seen):  # not listed: stat says whether it is gone
        _check_recorded(plan, store, objects, scan, key, recorded[key], finished)
    _plan_stale_rows(plan, store, scan)


def _skip_partition(
    plan: ReconcilePlan, objects: ObjectStore, scan: _Partition, state: str
) -> None:
    count = sum(1 for _ in objects.list(scan.where))
    plan.findings.append(
        Finding(
            kind=FindingKind.PARTITION_BEING_REMOVED,
            action=Action.REPORT_ONLY,
            actionable=False,
            message=f"{scan.name}-{scan.number} is {state}: the partition remover owns its "
            f"{count} object(s) and its rows; not checked",
            topic=scan.name,
            topic_id=scan.topic.topic_id,
            partition=scan.number,
        )
    )


def _stem(start_offset: int, segment_id: str) -> str:
    return f"{start_offset:020d}-{segment_id}"


def _stem_in(key: str, where: str) -> str | None:
    """The ``<offset>-<segment id>`` a key under a partition prefix belongs to, if any."""
    found = _SEGMENT_FILE.match(key[len(where) :]) if key.startswith(where) else None
    return found["stem"] if found else None


def _finished_objects(store: MetadataStore, topic_id: str, partition: int) -> dict[str, _Recorded]:
    """Object rows of the partition's COPY_SEGMENT_FINISHED segments, in one indexed query.

    It belongs in SegmentStore; it lives here until it moves there.
    """
    obj, seg = RemoteSegmentObject, RemoteLogSegment
    query = (
        select(col(obj.key), col(obj.segment_id), col(obj.kind), col(obj.size))
        .join(seg, col(seg.segment_id) == col(obj.segment_id))
        .where(
            col(seg.topic_id) == topic_id,
            col(seg.partition) == partition,
            col(seg.state) == _S.COPY_SEGMENT_FINISHED.value,
        )
    )
    with store.engine.connect() as connection:
        return {key: _Recorded(s, k, int(size)) for key, s, k, size in connection.execute(query)}


def _check_recorded(
    plan: ReconcilePlan,
    store: MetadataStore,
    objects: ObjectStore,
    scan: _Partition,
    key: str,
    recorded: _Recorded,
    finished: dict[str, SegmentSummary],
) -> None:
    """A FINISHED segment's object must exist with its recorded size; else data loss.

    The row is read again after the stat: a segment that retention started deleting since the
    partition was read lost its objects legitimately (DELETE_SEGMENT_STARTED comes first).
    """
    found = objects.stat(key)
    if found is not None and found.size == recorded.size:
        return
    current = _segment_row(store, recorded.segment_id)
    if current is None or current.state != _S.COPY_SEGMENT_FINISHED.value:
        return
    row = finished.get(recorded.segment_id)
    span = f"offsets {row.start_offset}-{row.end_offset}" if row else "offsets ?"
    segment = f"segment {recorded.segment_id} ({span}) is COPY_SEGMENT_FINISHED"
    if found is None:
        kind = FindingKind.MISSING_OBJECT
        what = f"but its {recorded.kind} object is missing"
    else:
        kind = FindingKind.SIZE_MISMATCH
        what = f"but its {recorded.kind} object has {found.size} bytes, {recorded.size} recorded"
    plan.findings.append(
        Finding(
            kind=kind,
            action=Action.REPORT_ONLY,
            actionable=False,
            message=f"{segment} {what}: reads of these offsets fail. Restore the object from "
            "a backup or re-tier the offsets; the metadata is kept so the loss stays visible",
            topic=scan.name,
            topic_id=scan.topic.topic_id,
            partition=scan.number,
            key=key,
            segment_id=recorded.segment_id,
            size=recorded.size,
            age_ms=_age(plan.now_ms, found.last_modified_ms) if found else None,
        )
    )


def _plan_stale_rows(plan: ReconcilePlan, store: MetadataStore, scan: _Partition) -> None:
    lease_live = copy_lease_live(scan.row, plan.now_ms)
    states = (_S.COPY_SEGMENT_STARTED, _S.DELETE_SEGMENT_STARTED)
    for row in store.segments(scan.topic.topic_id, scan.number, states=states):
        finding = _stale_row_finding(plan, scan, row, lease_live=lease_live)
        if finding is not None:
            plan.findings.append(finding)


def _stale_row_finding(
    plan: ReconcilePlan, scan: _Partition, row: RemoteLogSegment, *, lease_live: bool
) -> Finding | None:
    span = f"offsets {row.start_offset}-{row.end_offset}"
    if row.state == _S.COPY_SEGMENT_STARTED.value:
        live = copy_attempt_live(
            row.created_ms, lease_live=lease_live, now_ms=plan.now_ms, grace_ms=plan.row_grace_ms
        )
        if live:
            return None  # a copy may still be at work on it
        kind, action, age = FindingKind.STALE_COPY, Action.DELETE_STALE_COPY, row.created_ms
        message = (
            f"segment {row.segment_id} ({span}) is COPY_SEGMENT_STARTED for "
            f"{human_duration(plan.now_ms - row.created_ms)} (owner {row.owner}) and no copy lease "
            "is held: an abandoned copy, deleted through DELETE_SEGMENT_STARTED/FINISHED"
        )
    else:
        if plan.now_ms - row.event_timestamp_ms < plan.row_grace_ms:
            return None  # a delete may be running right now
        kind, action, age = FindingKind.STALE_DELETE, Action.FINISH_DELETE, row.event_timestamp_ms
        message = (
            f"segment {row.segment_id} ({span}) is DELETE_SEGMENT_STARTED for "
            f"{human_duration(plan.now_ms - row.event_timestamp_ms)}: an interrupted delete, "
            "finished by deleting its objects and recording DELETE_SEGMENT_FINISHED"
        )
    return Finding(
        kind=kind,
        action=action,
        actionable=True,
        message=message,
        topic=scan.name,
        topic_id=scan.topic.topic_id,
        partition=scan.number,
        segment_id=row.segment_id,
        size=row.segment_size_bytes,
        age_ms=plan.now_ms - age,
    )


class _Place(NamedTuple):
    """Where an orphan key lies, for its finding and message."""

    topic: str | None
    topic_id: str | None
    partition: int | None
    why: str


def _unregistered_place(key: str, prefix: str, topic_dirs: dict[str, Topic]) -> _Place:
    """Describe a key outside every registered partition prefix."""
    top = key[len(prefix) :].split("/", 1)[0]
    topic = topic_dirs.get(f"{prefix}{top}/")
    if topic is None:
        return _Place(None, None, None, "outside every registered topic")
    name = kafka_topic_name(topic.name)
    parts = key[len(prefix) :].split("/")
    number = int(parts[1]) if len(parts) >= 3 and parts[1].isdigit() else None
    if number is None:
        return _Place(name, topic.topic_id, None, f"under topic {name} but in no partition")
    return _Place(name, topic.topic_id, number, f"partition {number} of {name} is not registered")


def _orphan_place(store: MetadataStore, scan: _Partition, key: str) -> _Place | None:
    """Where an unnamed key in a registered partition lies, and whose tombstone it is; None
    when a live segment names it after all (a copy that started after the partition was read).
    """
    row = _segment_row(store, _segment_id_of(key))
    if row is None:
        why = "no segment names it"
    elif row.state in _LIVE_NAMES:
        return None
    else:
        why = f"its segment {row.segment_id} is {row.state}"
    return _Place(scan.name, scan.topic.topic_id, scan.number, why)


def _segment_row(store: MetadataStore, segment_id: str | None) -> RemoteLogSegment | None:
    """The segment row with this id (read now), if there is one."""
    if segment_id is None:
        return None
    try:
        return store.segment(segment_id)
    except UnknownSegmentError:
        return None


def _add_orphan(plan: ReconcilePlan, objects: ObjectStore, key: str, place: _Place) -> None:
    found = objects.stat(key)
    if found is None:
        return  # deleted between the listing and now: nothing to report
    age = _age(plan.now_ms, found.last_modified_ms)
    old_enough = age is not None and age >= plan.object_grace_ms
    grace = human_duration(plan.object_grace_ms)
    if age is None:
        when = "the bucket reports no modification time, so it is never deleted"
    elif old_enough:
        when = f"last written {human_duration(age)} ago, past the {grace} grace period"
    else:
        when = f"last written {human_duration(age)} ago, within the {grace} grace period: kept"
    plan.findings.append(
        Finding(
            kind=FindingKind.ORPHAN_OBJECT,
            action=Action.DELETE_OBJECT,
            actionable=old_enough,
            message=f"{key}: {place.why}; {when}",
            topic=place.topic,
            topic_id=place.topic_id,
            partition=place.partition,
            key=key,
            segment_id=_segment_id_of(key),
            size=found.size,
            age_ms=age,
        )
    )


def _segment_id_of(key: str) -> str | None:
    found = _SEGMENT_FILE.match(key.rsplit("/", 1)[-1])
    return found["segment_id"] if found else None


def _age(now_ms: int, last_modified_ms: int | None) -> int | None:
    return None if last_modified_ms is None else now_ms - last_modified_ms


def human_duration(ms: int) -> str:
    """A short human duration: 0s, 45s, 12m, 3.5h, 2.0d."""
    seconds = ms / 1000
    if abs(seconds) < 60:
        return f"{seconds:.0f}s"
    if abs(seconds) < 3600:
        return f"{seconds / 60:.0f}m"
    if abs(seconds) < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


# -- applying ---------------------------------------------------------------------------------

# Interrupted deletes first (as retention retries them first), then copies, then objects.
_ORDER = {Action.FINISH_DELETE: 0, Action.DELETE_STALE_COPY: 1, Action.DELETE_OBJECT: 2}


def apply_reconcile(
    plan: ReconcilePlan,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    objects: ObjectStore,
    *,
    actor: str,
    now_ms: int,
) -> ReconcileReport:
    """Fix the plan's actionable findings; everything else is kept as found.

    Never touches missing-object or size-mismatch findings. Each action re-checks its finding
    first; a storage or store error fails that finding only.
    """
    done: dict[int, Outcome] = {}
    for finding in sorted(plan.actionable, key=lambda f: _ORDER.get(f.action, 3)):
        try:
            result, detail = _apply_one(finding, plan, store, rsm, objects, actor, now_ms)
        except Exception as exc:
            log.error("reconcile %s %s: %s", finding.kind, finding.subject, exc)
            result, detail = Result.FAILED, f"{type(exc).__name__}: {exc}"
        if result is Result.SKIPPED:
            log.warning("reconcile %s %s: skipped, %s", finding.kind, finding.subject, detail)
        done[id(finding)] = Outcome(finding, result, detail)
    outcomes = [done.get(id(f)) or Outcome(f, Result.KEPT, why_kept(f)) for f in plan.findings]
    return ReconcileReport(actor, outcomes)  # in the plan's order, like the dry run's report


def why_kept(finding: Finding) -> str:
    """Why apply leaves a finding that is not actionable alone."""
    if finding.data_loss:
        return "report only (data loss)"
    if not finding.is_anomaly:
        return "left to the partition remover"
    if finding.age_ms is None:
        return "age unknown"
    return "within the grace period"


def _apply_one(
    finding: Finding,
    plan: ReconcilePlan,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    objects: ObjectStore,
    actor: str,
    now_ms: int,
) -> tuple[Result, str]:
    if finding.action is Action.DELETE_OBJECT:
        return _delete_orphan(finding, plan, store, objects, now_ms)
    if finding.action in (Action.FINISH_DELETE, Action.DELETE_STALE_COPY):
        return _delete_stale_row(finding, plan, store, rsm, actor, now_ms)
    return Result.KEPT, ""


def _delete_orphan(
    finding: Finding,
    plan: ReconcilePlan,
    store: MetadataStore,
    objects: ObjectStore,
    now_ms: int,
) -> tuple[Result, str]:
    """Delete an orphan object, unless it changed or a row names it since planning."""
    key = finding.key
    if key is None:
        raise ValueError(f"{finding.kind} finding without a key")
    found = objects.stat(key)
    if found is None:
        return Result.ALREADY_DONE, "already gone"
    age = _age(now_ms, found.last_modified_ms)
    if age is None or age < plan.object_grace_ms:
        return Result.SKIPPED, "written again since planning; younger than the grace now"
    owner = _live_owner(store, finding)
    if owner is not None:
        return Result.SKIPPED, f"segment {owner} now names it"
    objects.delete([key])
    crash_point("reconcile.after_object_delete")
    log.info("reconcile: deleted orphan object %s (%d bytes)", key, found.size)
    return Result.FIXED, f"deleted {found.size} bytes"


def _live_owner(store: MetadataStore, finding: Finding) -> str | None:
    """The live segment whose id the orphan's key carries, if one exists now. Segment ids are
    unique, so wherever that row is, the key is not an orphan any more."""
    row = _segment_row(store, finding.segment_id)
    return row.segment_id if row is not None and row.state in _LIVE_NAMES else None


def _delete_stale_row(
    finding: Finding,
    plan: ReconcilePlan,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    actor: str,
    now_ms: int,
) -> tuple[Result, str]:
    """Finish a stale delete, or delete a stale copy, through the segment state machine."""
    if finding.segment_id is None or finding.topic_id is None:
        raise ValueError(f"{finding.kind} finding without a segment")
    row = store.segment(finding.segment_id)
    if row.state == _S.DELETE_SEGMENT_FINISHED.value:
        return Result.ALREADY_DONE, "DELETE_SEGMENT_FINISHED already"
    why_not = _no_longer_stale(finding, plan, store, row, now_ms)
    if why_not:
        return Result.SKIPPED, why_not
    topic = store.topic_by_id(finding.topic_id)
    try:
        delete_remote_segment(store, rsm, topic, row, actor=actor, now_ms=now_ms)
    except InvalidStateTransition:
        if store.segment(row.segment_id).state == _S.DELETE_SEGMENT_FINISHED.value:
            return Result.ALREADY_DONE, "another worker finished it"
        raise
    if finding.kind is FindingKind.STALE_COPY:
        crash_point("reconcile.after_stale_copy")
        return Result.FIXED, "COPY_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED"
    crash_point("reconcile.after_stale_delete")
    return Result.FIXED, "DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED"


def _no_longer_stale(
    finding: Finding,
    plan: ReconcilePlan,
    store: MetadataStore,
    row: RemoteLogSegment,
    now_ms: int,
) -> str | None:
    """Why the row must be left alone now, or None. A stale copy that finished meanwhile is
    data; one whose partition is leased again may be in the hands of a live copy."""
    if row.state == _S.DELETE_SEGMENT_STARTED.value:
        return None  # finishing a delete is always safe: the intent is durable
    if finding.kind is not FindingKind.STALE_COPY or row.state != _S.COPY_SEGMENT_STARTED.value:
        return f"is {row.state} now"
    lease_live = copy_lease_live(store.partition(row.topic_id, row.partition), now_ms)
    live = copy_attempt_live(
        row.created_ms, lease_live=lease_live, now_ms=now_ms, grace_ms=plan.row_grace_ms
    )
    return "a copy lease is held on its partition now" if live else None


# -- reporting --------------------------------------------------------------------------------


def reconcile_summary(
    plan: ReconcilePlan,
    report: ReconcileReport | None,
    *,
    max_findings: int | None = None,
) -> dict[str, Any]:
    """A JSON-serialisable summary: counts, findings (with outcomes after apply), totals.

    ``max_findings`` caps the list (a bucket full of orphans must not flood an XCom); the
    counts always cover everything.
    """
    if report is not None:
        items = [o.as_dict() for o in report.outcomes]
    else:
        items = [f.as_dict() for f in plan.findings]
    shown = items if max_findings is None else items[:max_findings]
    return {
        "applied": report is not None,
        "prefix": plan.prefix,
        "now_ms": plan.now_ms,
        "object_grace_ms": plan.object_grace_ms,
        "row_grace_ms": plan.row_grace_ms,
        "partitions_checked": plan.partitions_checked,
        "objects_listed": plan.objects_listed,
        "counts": plan.counts(),
        "anomalies": len(plan.anomalies),
        "actionable": len(plan.actionable),
        "data_loss": len(plan.data_loss),
        "remaining": len(report.remaining) if report else len(plan.anomalies),
        "failed": len(report.failed) if report else 0,
        "report": report.as_dict() if report else None,
        "findings": shown,
        "findings_omitted": len(items) - len(shown),
    }
