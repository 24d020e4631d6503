"""Orphan reconciliation: compare the bucket with the metadata store, and fix what is safe.

Beyond Kafka, which has no such check: it answers the commonest complaint about tiered storage,
"the bucket holds data nothing points to" (and its worse twin, "metadata points to nothing").
``plan_reconcile`` (plan.py) only reads. Each prefix tierflow owns in the bucket
(storage/owned_prefixes.py) is judged by its own rule; it finds

* ``orphan-object`` (orphans.py): a key under the storage prefix that no live segment row
  names (rows in COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED or DELETE_SEGMENT_STARTED); or a
  file under the Iceberg warehouse that no snapshot of its table references (warehouse.py).
* ``warehouse-unchecked`` (warehouse.py): the Iceberg catalog or a table cannot be read, so
  nothing under the warehouse is judged. Diskless WAL objects are the diskless GC's.
* ``stale-copy`` / ``stale-delete`` (segments.py): a copy with no live attempt, or a delete
  started longer ago than the row grace.
* ``missing-object`` / ``size-mismatch`` (segments.py): a COPY_SEGMENT_FINISHED segment whose
  recorded objects are absent or have another size. Data loss: always report-only.

Partitions whose removal is pending belong to removal/remove.py and are skipped.
``apply_reconcile`` (apply.py) acts on the actionable findings only, re-checking each right
before it acts. findings.py holds what is found, report.py what apply did with it.
"""

from tierflow.lifecycle.reconcile.apply import apply_reconcile
from tierflow.lifecycle.reconcile.findings import (
    Action,
    Finding,
    FindingKind,
    ReconcilePlan,
)
from tierflow.lifecycle.reconcile.plan import ReconcileGrace, ReconcileScope, plan_reconcile
from tierflow.lifecycle.reconcile.report import (
    Outcome,
    ReconcileReport,
    Result,
    reconcile_summary,
    why_kept,
)

__all__ = [
    "Action",
    "Finding",
    "FindingKind",
    "Outcome",
    "ReconcileGrace",
    "ReconcilePlan",
    "ReconcileReport",
    "ReconcileScope",
    "Result",
    "apply_reconcile",
    "plan_reconcile",
    "reconcile_summary",
    "why_kept",
]
