"""Deleting a partition's oldest batches: retention, and dropping batches after a merge.

Objects are immutable, so deleting a batch is logical (KIP-1163, "Batch deletion"): its row
goes and its object's used size shrinks by its size. An object whose used size reaches zero is
marked DELETING with a deadline ``delete_grace_ms`` ahead, so that fetches that looked its
coordinates up before can still read it; the garbage collector deletes it after that.

One transaction per call. It starts by locking the partition's log row (a write), then deletes
the batch rows, then updates the objects in object id order: two truncations (or a truncation
and a commit) always take their locks in the same order, so they never deadlock.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from sqlalchemy import Connection, Row, case, delete, func, update
from sqlmodel import col, select

from tierflow.diskless.commits import FIND_PAGE_ROWS, Commits
from tierflow.diskless.coordinates import BatchCoordinate, PartitionBatches, PrefixDeletion
from tierflow.diskless.errors import DisklessError
from tierflow.diskless.models import DisklessBatch, DisklessLog, WalObject, WalObjectState
from tierflow.metadata.store_base import partition_key, update_one

_DELETING = WalObjectState.DELETING.value


class Truncation(Commits):
    def delete_batches_below(
        self,
        topic_id: str,
        partition: int,
        offset: int,
        *,
        now_ms: int,
        delete_grace_ms: int,
        advance_log_start: bool,
    ) -> PrefixDeletion:
        """Delete every batch whose offsets all lie below ``offset``; idempotent.

        ``advance_log_start`` is retention's (the data is gone: the log start offset moves to
        ``offset``); without it only the WAL start moves, for data that now lives in tiered
        segments (a merge). A batch straddling ``offset`` is refused: offsets are cut at batch
        boundaries.
        """
        if delete_grace_ms < 0:
            raise ValueError("delete_grace_ms must not be negative")
        where_log = partition_key(DisklessLog, topic_id, partition)
        with self._write() as connection:  # one transaction, starting with the log row's lock
            if not update_one(connection, DisklessLog, where_log, {"updated_ms": now_ms}):
                self.log(topic_id, partition)  # raises UnknownDisklessPartitionError
            _refuse_straddling(connection, topic_id, partition, offset)
            count, size, marked = self._delete_below(
                connection, topic_id, partition, offset, now_ms, now_ms + delete_grace_ms
            )
            log = connection.execute(select(DisklessLog).where(*where_log)).one()
            values = _moved_starts(log, offset, size, advance_log_start)
            connection.execute(update(DisklessLog).where(*where_log).values(**values))
        return PrefixDeletion(
            topic_id=topic_id,
            partition=partition,
            batches_deleted=count,
            bytes_deleted=size,
            log_start_offset=values.get("log_start_offset", log.log_start_offset),
            diskless_start_offset=values["diskless_start_offset"],
            objects_marked=marked,
        )

    def _delete_below(
        self,
        connection: Connection,
        topic_id: str,
        partition: int,
        offset: int,
        now_ms: int,
        deadline_ms: int,
    ) -> tuple[int, int, list[str]]:
        """Delete the batch rows wholly below ``offset`` and release their bytes in their
        objects; (batches, bytes, keys of the objects emptied now)."""
        below = (
            *partition_key(DisklessBatch, topic_id, partition),
            col(DisklessBatch.last_offset) < offset,
        )
        freed = connection.execute(
            select(DisklessBatch.object_id, func.sum(DisklessBatch.byte_size), func.count())
            .where(*below)
            .group_by(col(DisklessBatch.object_id))
            .order_by(col(DisklessBatch.object_id))
        ).all()
        if not freed:
            return 0, 0, []
        connection.execute(delete(DisklessBatch).where(*below))
        marked = self._release(connection, freed, now_ms, deadline_ms)
        return sum(int(row[2]) for row in freed), sum(int(row[1]) for row in freed), marked

    def _release(
        self, connection: Connection, freed: Sequence[Row], now_ms: int, deadline_ms: int
    ) -> list[str]:
        """Shrink each object's used size (in object id order); mark those that reach zero
        DELETING. Returns the keys marked now."""
        marked: list[str] = []
        for object_id, freed_bytes, _count in freed:
            used_after = col(WalObject.used_size) - int(freed_bytes)
            emptied = used_after <= 0
            row = connection.execute(
                update(WalObject)
                .where(col(WalObject.object_id) == int(object_id))
                .values(
                    used_size=used_after,
                    state=case((emptied, _DELETING), else_=col(WalObject.state)),
                    marked_for_deletion_ms=case(
                        (emptied, now_ms), else_=col(WalObject.marked_for_deletion_ms)
                    ),
                    delete_after_ms=case(
                        (emptied, deadline_ms), else_=col(WalObject.delete_after_ms)
                    ),
                )
                .returning(col(WalObject.object_key), col(WalObject.used_size))
            ).one()
            if row[1] <= 0:
                marked.append(str(row[0]))
        return marked

    # -- the merge job's view ---------------------------------------------------------------

    def merge_candidates(
        self,
        *,
        committed_before_ms: int,
        topic_id: str | None = None,
        partition: int | None = None,
        max_bytes_per_partition: int | None = None,
    ) -> list[PartitionBatches]:
        """Per diskless partition (of one topic, or one partition of it), the batches a merge
        may rewrite into a tiered segment: the oldest ones, in offset order, committed before
        ``committed_before_ms``, stopping at the first younger batch (so what is merged is
        always a prefix of the WAL), and within ``max_bytes_per_partition`` (at least one
        batch)."""
        if partition is not None and topic_id is None:
            raise ValueError("a partition filter needs the topic id")
        logs = self.logs(topic_id)
        if partition is not None:
            logs = [log for log in logs if log.partition == partition]
        result: list[PartitionBatches] = []
        budget = max_bytes_per_partition
        for log in logs:
            chosen: list[BatchCoordinate] = []
            total = 0
            for batch in self._oldest_batches(log.topic_id, log.partition):
                if batch.append_time_ms >= committed_before_ms:
                    break
                if budget is not None and chosen and total + batch.byte_size > budget:
                    break
                chosen.append(batch)
                total += batch.byte_size
            if chosen:
                result.append(PartitionBatches(log.topic_id, log.partition, chosen))
        return result

    def _oldest_batches(self, topic_id: str, partition: int) -> Iterator[BatchCoordinate]:
        """The partition's batches in offset order, read a page at a time: a merge with a
        budget stops early instead of loading a large backlog's every row."""
        return self._batches_after(topic_id, partition, -1, FIND_PAGE_ROWS)

    def drop_merged_batches(
        self,
        topic_id: str,
        partition: int,
        through_offset: int,
        *,
        now_ms: int,
        delete_grace_ms: int,
    ) -> PrefixDeletion:
        """After a merged segment covering offsets up to ``through_offset`` is
        COPY_SEGMENT_FINISHED: drop those batches from the WAL (reads of them now go to the
        tiered segment). Rerunning it changes nothing."""
        return self.delete_batches_below(
            topic_id,
            partition,
            through_offset + 1,
            now_ms=now_ms,
            delete_grace_ms=delete_grace_ms,
            advance_log_start=False,
        )


def _refuse_straddling(connection: Connection, topic_id: str, partition: int, offset: int) -> None:
    """Offsets are cut at batch boundaries: refuse an ``offset`` inside a batch."""
    straddling = connection.execute(
        select(DisklessBatch.base_offset, DisklessBatch.last_offset).where(
            *partition_key(DisklessBatch, topic_id, partition),
            col(DisklessBatch.base_offset) < offset,
            col(DisklessBatch.last_offset) >= offset,
        )
    ).first()
    if straddling is not None:
        raise DisklessError(
            f"{topic_id}-{partition}: offset {offset} is inside the batch "
            f"{straddling[0]}-{straddling[1]}; cut at a batch boundary"
        )


def _moved_starts(log: Row, offset: int, size: int, advance_log_start: bool) -> dict[str, int]:
    """The log row's new WAL start (never past the high watermark), byte size and, for
    retention, log start offset, once the batches below ``offset`` (``size`` bytes) are gone."""
    new_log_start = max(log.log_start_offset, offset) if advance_log_start else None
    new_wal_start = max(log.diskless_start_offset, offset)
    if new_log_start is not None and new_log_start > log.high_watermark:
        raise DisklessError(
            f"{log.topic_id}-{log.partition}: cannot move the log start offset to {offset}, "
            f"past the high watermark {log.high_watermark}"
        )
    values: dict[str, int] = {
        "diskless_start_offset": min(new_wal_start, log.high_watermark),
        "byte_size": log.byte_size - size,
    }
    if new_log_start is not None:
        values["log_start_offset"] = new_log_start
    return values
