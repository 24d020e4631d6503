"""Findings about segment rows: stale copies and deletes, and finished segments' lost objects.

* ``stale-copy``: COPY_SEGMENT_STARTED with no live attempt, by retention's rule
  (copy_liveness): nobody holds an unexpired copy lease and the row is older than the grace.
* ``stale-delete``: DELETE_SEGMENT_STARTED whose delete started longer ago than the grace.
* ``missing-object`` / ``size-mismatch``: data loss, so report-only: dropping the metadata
  would only hide the loss from readers and on-call.
"""

from __future__ import annotations

from tierflow.lifecycle.copy.liveness import copy_attempt_live, copy_lease_live
from tierflow.lifecycle.reconcile.findings import (
    Action,
    Finding,
    FindingKind,
    ReconcilePlan,
    object_age,
)
from tierflow.lifecycle.reconcile.layout import PartitionScan
from tierflow.metadata.errors import UnknownSegmentError
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.segment_store import FinishedObject, SegmentSummary
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.storage.object_store import ObjectStore
from tierflow.units import human_duration

_S = RemoteLogSegmentState
# Rows that name their objects; a DELETE_SEGMENT_FINISHED tombstone names nothing any more.
LIVE_STATES = (_S.COPY_SEGMENT_STARTED, _S.COPY_SEGMENT_FINISHED, _S.DELETE_SEGMENT_STARTED)
LIVE_NAMES = frozenset(state.value for state in LIVE_STATES)


def segment_row(store: MetadataStore, segment_id: str | None) -> RemoteLogSegment | None:
    """The segment row with this id (read now), if there is one."""
    if segment_id is None:
        return None
    try:
        return store.segment(segment_id)
    except UnknownSegmentError:
        return None


def check_recorded(
    plan: ReconcilePlan,
    store: MetadataStore,
    objects: ObjectStore,
    scan: PartitionScan,
    key: str,
    recorded: FinishedObject,
    finished: dict[str, SegmentSummary],
) -> None:
    """A FINISHED segment's object must exist with its recorded size; else data loss.

    The row is read again after the stat: a segment that retention started deleting since the
    partition was read lost its objects legitimately (DELETE_SEGMENT_STARTED comes first).
    """
    found = objects.stat(key)
    if found is not None and found.size == recorded.size:
        return
    current = segment_row(store, recorded.segment_id)
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
            **scan.finding_names,
            key=key,
            segment_id=recorded.segment_id,
            size=recorded.size,
            age_ms=object_age(plan.now_ms, found.last_modified_ms) if found else None,
        )
    )


def plan_stale_rows(plan: ReconcilePlan, store: MetadataStore, scan: PartitionScan) -> None:
    lease_live = copy_lease_live(scan.row, plan.now_ms)
    states = (_S.COPY_SEGMENT_STARTED, _S.DELETE_SEGMENT_STARTED)
    for row in store.segments(scan.topic.topic_id, scan.number, states=states):
        finding = _stale_row_finding(plan, scan, row, lease_live=lease_live)
        if finding is not None:
            plan.findings.append(finding)


def _stale_row_finding(
    plan: ReconcilePlan, scan: PartitionScan, row: RemoteLogSegment, *, lease_live: bool
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
        **scan.finding_names,
        segment_id=row.segment_id,
        size=row.segment_size_bytes,
        age_ms=plan.now_ms - age,
    )
