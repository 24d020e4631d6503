"""Deleting garbage WAL objects from storage: the library behind a diskless_gc DAG.

Order matters for crash safety: abandon stale uncommitted objects (a conditional UPDATE),
delete the due objects from storage, and only then drop their rows. A run killed anywhere is
finished by the next one: deleting a key that is already gone succeeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.storage.object_store import ObjectStore

DEFAULT_LIMIT = 1000


@dataclass
class GcReport:
    abandoned: list[str] = field(default_factory=list)  # uncommitted past their grace
    deleted: list[str] = field(default_factory=list)  # deleted from storage, rows dropped
    bytes_deleted: int = 0

    def as_dict(self) -> dict[str, object]:
        return {
            "abandoned": self.abandoned,
            "deleted": self.deleted,
            "bytes_deleted": self.bytes_deleted,
        }


def collect_garbage(
    coordinator: DisklessCoordinator,
    objects: ObjectStore,
    *,
    now_ms: int,
    uncommitted_grace_ms: int,
    limit: int = DEFAULT_LIMIT,
) -> GcReport:
    """Delete every WAL object that is due (at most ``limit`` per run)."""
    report = GcReport()
    report.abandoned = coordinator.abandon_uncommitted(
        now_ms=now_ms, grace_ms=uncommitted_grace_ms, limit=limit
    )
    due = coordinator.objects_due_for_deletion(now_ms=now_ms, limit=limit)
    if not due:
        return report
    keys = [found.object_key for found in due]
    objects.delete(keys)
    coordinator.forget_objects(keys)
    report.deleted = keys
    report.bytes_deleted = sum(found.total_size for found in due)
    return report
