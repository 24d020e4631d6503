"""Applying a plan: fix the actionable findings, each re-checked right before it is fixed.

Between planning and now a copy may have started, or a delete finished: orphans are stat'ed and
looked up again, and stale rows are read again and go through ``delete_remote_segment`` (the
state machine, with events). A failure is recorded for its finding and the others continue.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property

from tierflow.faults import crash_point
from tierflow.lifecycle.copy.liveness import copy_attempt_live, copy_lease_live
from tierflow.lifecycle.reconcile.findings import (
    Action,
    Finding,
    FindingKind,
    ReconcilePlan,
    object_age,
)
from tierflow.lifecycle.reconcile.report import Outcome, ReconcileReport, Result, why_kept
from tierflow.lifecycle.reconcile.segments import LIVE_NAMES, segment_row
from tierflow.lifecycle.reconcile.warehouse import (
    TableFiles,
    WarehouseCatalog,
    WarehouseUnreadableError,
    read_tables,
    still_orphan,
)
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.owned_prefixes import BucketLayout, Owner

log = logging.getLogger(__name__)

_S = RemoteLogSegmentState
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
    warehouse: WarehouseCatalog | None = None,
) -> ReconcileReport:
    """Fix the plan's actionable findings; everything else is kept as found.

    Never touches missing-object or size-mismatch findings. Each action re-checks its finding
    first (an orphan in the Iceberg warehouse against ``warehouse``, its catalog, read again
    once); a storage or store error fails that finding only.
    """
    fixer = _Fixer(plan, store, rsm, objects, actor, now_ms, warehouse)
    done: dict[int, Outcome] = {}
    for finding in sorted(plan.actionable, key=lambda f: _ORDER.get(f.action, 3)):
        try:
            result, detail = fixer.apply(finding)
        except Exception as exc:
            log.error("reconcile %s %s: %s", finding.kind, finding.subject, exc)
            result, detail = Result.FAILED, f"{type(exc).__name__}: {exc}"
        if result is Result.SKIPPED:
            log.warning("reconcile %s %s: skipped, %s", finding.kind, finding.subject, detail)
        done[id(finding)] = Outcome(finding, result, detail)
    outcomes = [done.get(id(f)) or Outcome(f, Result.KEPT, why_kept(f)) for f in plan.findings]
    return ReconcileReport(actor, outcomes)  # in the plan's order, like the dry run's report


@dataclass(frozen=True)
class _Fixer:
    """One apply run: the plan, where to fix it, who does it and when."""

    plan: ReconcilePlan
    store: MetadataStore
    rsm: RemoteStorageManager
    objects: ObjectStore
    actor: str
    now_ms: int
    warehouse: WarehouseCatalog | None

    def apply(self, finding: Finding) -> tuple[Result, str]:
        if finding.action is Action.DELETE_OBJECT:
            return self.delete_orphan(finding)
        if finding.action in (Action.FINISH_DELETE, Action.DELETE_STALE_COPY):
            return self.delete_stale_row(finding)
        return Result.KEPT, ""

    def delete_orphan(self, finding: Finding) -> tuple[Result, str]:
        """Delete an orphan object, unless it changed or a row names it since planning."""
        key = finding.key
        if key is None:
            raise ValueError(f"{finding.kind} finding without a key")
        found = self.objects.stat(key)
        if found is None:
            return Result.ALREADY_DONE, "already gone"
        age = object_age(self.now_ms, found.last_modified_ms)
        if not self.plan.past_object_grace(age):
            return Result.SKIPPED, "written again since planning; younger than the grace now"
        why_not = self.named_now(finding, key)
        if why_not is not None:
            return Result.SKIPPED, why_not
        self.objects.delete([key])
        crash_point("reconcile.after_object_delete")
        log.info("reconcile: deleted orphan object %s (%d bytes)", key, found.size)
        return Result.FIXED, f"deleted {found.size} bytes"

    def named_now(self, finding: Finding, key: str) -> str | None:
        """Why the orphan is no orphan now, by its owner's rule; None when it still is."""
        if BucketLayout(self.plan.prefix).owner_of(key) is Owner.ICEBERG_WAREHOUSE:
            return still_orphan(self.tables_now, key)
        owner = _live_owner(self.store, finding)
        return None if owner is None else f"segment {owner} now names it"

    @cached_property
    def tables_now(self) -> list[TableFiles] | str:
        """The warehouse's tables read again, once per apply; or why they cannot be read."""
        try:
            return read_tables(self.warehouse)
        except WarehouseUnreadableError as exc:
            return str(exc)

    def delete_stale_row(self, finding: Finding) -> tuple[Result, str]:
        """Finish a stale delete, or delete a stale copy, through the segment state machine."""
        if finding.segment_id is None or finding.topic_id is None:
            raise ValueError(f"{finding.kind} finding without a segment")
        store = self.store
        row = store.segment(finding.segment_id)
        if row.state == _S.DELETE_SEGMENT_FINISHED.value:
            return Result.ALREADY_DONE, "DELETE_SEGMENT_FINISHED already"
        why_not = self.no_longer_stale(finding, row)
        if why_not:
            return Result.SKIPPED, why_not
        topic = store.topic_by_id(finding.topic_id)
        stale_copy = finding.kind is FindingKind.STALE_COPY
        if not delete_remote_segment(
            store, self.rsm, topic, row, actor=self.actor, now_ms=self.now_ms, abandoned=stale_copy
        ):
            if store.segment(row.segment_id).state == _S.COPY_SEGMENT_FINISHED.value:
                return Result.SKIPPED, "its copy finished after all"
            return Result.ALREADY_DONE, "another worker finished it"
        if finding.kind is FindingKind.STALE_COPY:
            crash_point("reconcile.after_stale_copy")
            return Result.FIXED, "COPY_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED"
        crash_point("reconcile.after_stale_delete")
        return Result.FIXED, "DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED"

    def no_longer_stale(self, finding: Finding, row: RemoteLogSegment) -> str | None:
        """Why the row must be left alone now, or None. A stale copy that finished meanwhile
        is data; one whose partition is leased again may be in the hands of a live copy."""
        if row.state == _S.DELETE_SEGMENT_STARTED.value:
            return None  # finishing a delete is always safe: the intent is durable
        if finding.kind is not FindingKind.STALE_COPY or row.state != _S.COPY_SEGMENT_STARTED.value:
            return f"is {row.state} now"
        partition = self.store.partition(row.topic_id, row.partition)
        lease_live = copy_lease_live(partition, self.now_ms)
        live = copy_attempt_live(
            row.created_ms,
            lease_live=lease_live,
            now_ms=self.now_ms,
            grace_ms=self.plan.row_grace_ms,
        )
        return "a copy lease is held on its partition now" if live else None


def _live_owner(store: MetadataStore, finding: Finding) -> str | None:
    """The live segment whose id the orphan's key carries, if one exists now. Segment ids are
    unique, so wherever that row is, the key is not an orphan any more."""
    row = segment_row(store, finding.segment_id)
    return row.segment_id if row is not None and row.state in LIVE_NAMES else None
