"""What reconciliation finds: one Finding per anomaly, gathered in a ReconcilePlan.

A finding carries what apply would do about it, so a dry run and an applied run report the
same list, in the same order.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from tierflow.units import human_duration


class FindingKind(StrEnum):
    ORPHAN_OBJECT = "orphan-object"
    STALE_COPY = "stale-copy"
    STALE_DELETE = "stale-delete"
    MISSING_OBJECT = "missing-object"
    SIZE_MISMATCH = "size-mismatch"
    # Informational: the partition remover owns this partition; nothing in it was checked.
    PARTITION_BEING_REMOVED = "partition-being-removed"
    # The Iceberg catalog or a table of it cannot be read: nothing in the warehouse was judged.
    WAREHOUSE_UNCHECKED = "warehouse-unchecked"


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

    def age_of(self, last_modified_ms: int | None) -> int | None:
        """How long before the plan an object was last written; None when the bucket does
        not say."""
        return object_age(self.now_ms, last_modified_ms)

    def past_object_grace(self, age_ms: int | None) -> bool:
        """Whether an orphan last written ``age_ms`` ago may be deleted: listings and clocks
        lag a copy in flight, and an object of unknown age is never deleted."""
        return age_ms is not None and age_ms >= self.object_grace_ms

    def object_grace_note(self, age_ms: int | None) -> str:
        """Why an orphan of this age is deleted or kept, for its finding's message."""
        grace = human_duration(self.object_grace_ms)
        if age_ms is None:
            return "the bucket reports no modification time, so it is never deleted"
        if self.past_object_grace(age_ms):
            return f"last written {human_duration(age_ms)} ago, past the {grace} grace period"
        return f"last written {human_duration(age_ms)} ago, within the {grace} grace period: kept"

    def counts(self) -> dict[str, int]:
        """Findings per kind, every kind present (zeros included) so reports line up."""
        out = {kind.value: 0 for kind in FindingKind}
        for finding in self.findings:
            out[finding.kind.value] += 1
        return out


def object_age(now_ms: int, last_modified_ms: int | None) -> int | None:
    """How long ago an object was last written; None when the bucket does not say."""
    return None if last_modified_ms is None else now_ms - last_modified_ms
