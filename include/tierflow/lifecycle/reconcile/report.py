"""What apply did with each finding, and the summary a dry run or an applied run reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tierflow.lifecycle.reconcile.findings import Finding, FindingKind, ReconcilePlan


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


def why_kept(finding: Finding) -> str:
    """Why apply leaves a finding that is not actionable alone."""
    if finding.data_loss:
        return "report only (data loss)"
    if finding.kind is FindingKind.WAREHOUSE_UNCHECKED:
        return "report only: nothing in the warehouse is deleted"
    if not finding.is_anomaly:
        return "left to the partition remover"
    if finding.age_ms is None:
        return "age unknown"
    return "within the grace period"


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
