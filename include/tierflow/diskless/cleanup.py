"""The garbage collector's view of WAL objects: what may be deleted from storage, and when.

Two kinds of garbage (KIP-1163, "Error handling and segment object garbage collection"):

- objects whose used size reached zero, marked DELETING with a deadline: deleted once it has
  passed, so fetches that hold their coordinates finish first;
- objects registered for upload whose commit never came (the writer died, or lost the
  coordinator): after the uncommitted grace period they are abandoned (UPLOADING -> DELETING,
  a conditional UPDATE, so a late commit and the collector cannot both win) and deleted.

Rows are dropped only after storage confirmed the delete, so a collector killed in between
simply deletes again next time (deleting a missing key succeeds).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete, exists
from sqlmodel import col, select

from tierflow.diskless.models import DisklessBatch, WalObject, WalObjectState
from tierflow.diskless.truncation import Truncation
from tierflow.metadata.store_base import update_one

_UPLOADING = WalObjectState.UPLOADING.value
_DELETING = WalObjectState.DELETING.value


class ObjectCleanup(Truncation):
    def uncommitted_objects(self, *, now_ms: int, grace_ms: int) -> list[WalObject]:
        """Objects registered at least ``grace_ms`` ago and still not committed."""
        query = (
            select(WalObject)
            .where(
                col(WalObject.state) == _UPLOADING,
                col(WalObject.created_ms) <= now_ms - grace_ms,
            )
            .order_by(col(WalObject.object_id))
        )
        return self._all(query)

    def abandon_uncommitted(self, *, now_ms: int, grace_ms: int, limit: int = 1000) -> list[str]:
        """Mark uncommitted objects older than the grace period DELETING, due at once (nobody
        can be reading them: no coordinates were ever handed out). Returns their keys."""
        if grace_ms < 0:
            raise ValueError("grace_ms must not be negative")
        stale = self.uncommitted_objects(now_ms=now_ms, grace_ms=grace_ms)[:limit]
        abandoned: list[str] = []
        for found in stale:
            read = (col(WalObject.object_id) == found.object_id, col(WalObject.state) == _UPLOADING)
            due = {"state": _DELETING, "marked_for_deletion_ms": now_ms, "delete_after_ms": now_ms}
            with self._write() as connection:
                won = update_one(connection, WalObject, read, due)
            if won:  # committed: neither a late commit nor another collector can take it back
                abandoned.append(found.object_key)
        return abandoned

    def objects_due_for_deletion(self, *, now_ms: int, limit: int = 1000) -> list[WalObject]:
        """DELETING objects whose deadline has passed, oldest deadline first."""
        query = (
            select(WalObject)
            .where(col(WalObject.state) == _DELETING, col(WalObject.delete_after_ms) <= now_ms)
            .order_by(col(WalObject.delete_after_ms), col(WalObject.object_id))
            .limit(limit)
        )
        return self._all(query)

    def forget_objects(self, keys: Iterable[str]) -> int:
        """Drop the rows of DELETING objects that storage confirmed deleted. A row still named
        by a batch is kept (it cannot be: such an object is never DELETING)."""
        wanted = sorted(set(keys))
        if not wanted:
            return 0
        referenced = exists().where(col(DisklessBatch.object_id) == col(WalObject.object_id))
        with self._write() as connection:
            result = connection.execute(
                delete(WalObject).where(
                    col(WalObject.object_key).in_(wanted),
                    col(WalObject.state) == _DELETING,
                    ~referenced,
                )
            )
        return int(result.rowcount)
