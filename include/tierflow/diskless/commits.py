"""Registering WAL objects, committing their batches, and finding batches to read.

A commit is one transaction. Its first statement moves the object UPLOADING -> COMMITTED,
which only one commit (or the garbage collector, abandoning it) can win. Then each partition's
high watermark is raised by the batch's offset count with ``UPDATE ... RETURNING``, partitions
in (topic id, partition) order so that concurrent commits never deadlock. On PostgreSQL the
row lock serializes commits per partition; on SQLite the database's single writer does. Either
way each commit gets the range just below the high watermark it raised, so commits from any
number of writers interleave without gaps or duplicates, and the unique index on (partition,
base offset) would refuse a duplicate even if that reasoning were wrong.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Select, insert, update
from sqlmodel import col, select

from tierflow.diskless.coordinates import BatchCoordinate
from tierflow.diskless.errors import CommitRejectedError, UnknownDisklessPartitionError
from tierflow.diskless.models import (
    DisklessBatch,
    DisklessLog,
    DisklessTopic,
    WalObject,
    WalObjectState,
)
from tierflow.diskless.registry import DisklessRegistry
from tierflow.diskless.wal_object import PlacedBatch, check_runs
from tierflow.metadata.store_base import partition_key
from tierflow.storage.object_store import validate_key

# A fetch reads coordinates in pages of this many rows until its byte budget is spent.
FIND_PAGE_ROWS = 500


class Commits(DisklessRegistry):
    def register_object(self, key: str, total_size: int, *, writer: str, now_ms: int) -> None:
        """Record an object before it is uploaded, so that if its commit never comes the
        garbage collector finds it (after the uncommitted grace period) without listing the
        bucket. Registering the same key twice is refused: names are fresh UUIDs."""
        validate_key(key)
        if total_size < 1:
            raise ValueError(f"{key}: a WAL object has at least its version byte")
        with self._write() as connection:
            connection.execute(
                insert(WalObject).values(
                    object_key=key,
                    state=WalObjectState.UPLOADING.value,
                    total_size=total_size,
                    used_size=0,
                    writer=writer,
                    created_ms=now_ms,
                )
            )

    def commit_object(
        self, key: str, batches: Sequence[PlacedBatch], *, now_ms: int
    ) -> list[BatchCoordinate]:
        """Assign offsets to ``batches`` (in object order) and make them readable, atomically.

        Repeating a commit that already succeeded (its answer was lost) returns the same
        coordinates. A commit of an object the garbage collector has abandoned, or of a
        partition that is not diskless, raises CommitRejectedError and assigns nothing.
        """
        found = self.wal_object(key)
        if found is None:
            raise CommitRejectedError(f"{key}: unknown WAL object; register it before uploading")
        if found.object_state is WalObjectState.COMMITTED:
            return self._repeated_commit(found, batches)
        if found.object_state is not WalObjectState.UPLOADING:
            raise CommitRejectedError(
                f"{key}: the object is {found.state}: it was not committed within the "
                "uncommitted grace period and is garbage now; produce its batches again"
            )
        check_runs(batches, found.total_size, key)
        timestamp_types = self._timestamp_types({b.topic_id for b in batches})
        used = sum(b.byte_size for b in batches)
        with self._write() as connection:  # one transaction: claim, offsets, batch rows
            object_id = _claim_object(connection, key, used, now_ms)
            assigned = _assign_offsets(connection, key, batches, now_ms)
            rows = [
                _batch_row(
                    object_id,
                    batch,
                    assigned[batch.byte_offset],
                    timestamp_types[batch.topic_id],
                    now_ms,
                )
                for batch in batches
            ]
            if rows:
                connection.execute(insert(DisklessBatch), rows)  # one executemany
        return [_coordinate({**row, "object_key": key}) for row in rows]

    def _timestamp_types(self, topic_ids: set[str]) -> dict[str, str]:
        found = self._all(
            select(DisklessTopic).where(col(DisklessTopic.topic_id).in_(sorted(topic_ids)))
        )
        types = {t.topic_id: t.timestamp_type for t in found}
        missing = sorted(topic_ids - types.keys())
        if missing:
            raise UnknownDisklessPartitionError(
                f"topic id(s) {', '.join(missing)} are not diskless topics; nothing committed"
            )
        return types

    def _repeated_commit(
        self, found: WalObject, batches: Sequence[PlacedBatch]
    ) -> list[BatchCoordinate]:
        existing = self.object_batches(found.object_key)
        asked = [(b.topic_id, b.partition, b.byte_offset, b.byte_size) for b in batches]
        have = [(b.topic_id, b.partition, b.byte_offset, b.byte_size) for b in existing]
        if sorted(asked) != sorted(have):
            raise CommitRejectedError(
                f"{found.object_key}: already committed with other batches "
                f"({len(have)} committed, {len(asked)} in this commit)"
            )
        return existing

    # -- reads ---------------------------------------------------------------------------

    def wal_object(self, key: str) -> WalObject | None:
        return self._first(select(WalObject).where(col(WalObject.object_key) == key))

    def wal_objects(self, state: WalObjectState | None = None) -> list[WalObject]:
        query = select(WalObject)
        if state is not None:
            query = query.where(col(WalObject.state) == state.value)
        return self._all(query.order_by(col(WalObject.object_id)))

    def object_batches(self, key: str) -> list[BatchCoordinate]:
        """The live batches of one object, in byte order (``describe`` per object)."""
        query = (
            _coordinates_query()
            .where(col(WalObject.object_key) == key)
            .order_by(col(DisklessBatch.byte_offset))
        )
        return self._coordinates(query)

    def find_batches(
        self, topic_id: str, partition: int, offset: int, max_bytes: int
    ) -> list[BatchCoordinate]:
        """Coordinates of the batches from the one holding ``offset``, in offset order, up to
        ``max_bytes`` (at least one batch, like Kafka's minOneMessage)."""
        found: list[BatchCoordinate] = []
        total = 0
        for batch in self._batches_after(topic_id, partition, offset - 1, FIND_PAGE_ROWS):
            if found and total + batch.byte_size > max_bytes:
                break
            found.append(batch)
            total += batch.byte_size
            if total >= max_bytes:
                break
        return found

    def _batches_after(
        self, topic_id: str, partition: int, after: int, page_rows: int
    ) -> Iterator[BatchCoordinate]:
        """The partition's batches whose last offset is above ``after``, in offset order, read
        ``page_rows`` at a time: a caller that stops early never loads a large backlog."""
        while True:
            query = (
                _coordinates_query()
                .where(
                    *partition_key(DisklessBatch, topic_id, partition),
                    col(DisklessBatch.last_offset) > after,
                )
                .order_by(col(DisklessBatch.last_offset))
                .limit(page_rows)
            )
            page = self._coordinates(query)
            yield from page
            if len(page) < page_rows:
                return
            after = page[-1].last_offset

    def partition_batches(
        self, topic_id: str, partition: int, *, limit: int | None = None
    ) -> list[BatchCoordinate]:
        """The partition's live batches in offset order (the oldest ``limit`` of them)."""
        query = (
            _coordinates_query()
            .where(
                *partition_key(DisklessBatch, topic_id, partition),
            )
            .order_by(col(DisklessBatch.base_offset))
        )
        if limit is not None:
            query = query.limit(limit)
        return self._coordinates(query)

    def _coordinates(self, query: Select) -> list[BatchCoordinate]:
        """Plain rows, not ORM objects: a fetch or a merge reads thousands of them."""
        with self.engine.connect() as connection:
            return [_coordinate(row) for row in connection.execute(query).mappings()]


def _claim_object(connection: Connection, key: str, used: int, now_ms: int) -> int:
    """UPLOADING -> COMMITTED (or DELETING when no batch is used): the commit's first
    statement, which only one commit or the garbage collector can win. The object's id."""
    object_id = connection.execute(
        update(WalObject)
        .where(
            col(WalObject.object_key) == key,
            col(WalObject.state) == WalObjectState.UPLOADING.value,
        )
        .values(
            state=_state_after_commit(used),
            committed_ms=now_ms,
            used_size=used,
            marked_for_deletion_ms=None if used else now_ms,
            delete_after_ms=None if used else now_ms,
        )
        .returning(col(WalObject.object_id))
    ).scalar_one_or_none()
    if object_id is None:
        raise CommitRejectedError(f"{key}: abandoned by the garbage collector meanwhile")
    return int(object_id)


def _assign_offsets(
    connection: Connection, key: str, batches: Sequence[PlacedBatch], now_ms: int
) -> dict[int, tuple[int, int]]:
    """Raise each partition's high watermark by its batches' offset count, partitions in
    (topic id, partition) order (no deadlock between commits); byte offset -> (base offset,
    leader epoch) of every batch, from the range just below the raised high watermark."""
    runs: dict[tuple[str, int], list[PlacedBatch]] = defaultdict(list)
    for batch in batches:
        runs[(batch.topic_id, batch.partition)].append(batch)
    assigned: dict[int, tuple[int, int]] = {}
    for (topic_id, partition), run in sorted(runs.items()):
        total = sum(b.offset_count for b in run)
        raised = connection.execute(
            update(DisklessLog)
            .where(*partition_key(DisklessLog, topic_id, partition))
            .values(
                high_watermark=col(DisklessLog.high_watermark) + total,
                byte_size=col(DisklessLog.byte_size) + sum(b.byte_size for b in run),
                updated_ms=now_ms,
            )
            .returning(col(DisklessLog.high_watermark), col(DisklessLog.leader_epoch))
        ).one_or_none()
        if raised is None:
            raise UnknownDisklessPartitionError(
                f"{key}: no diskless partition {topic_id}-{partition}; nothing committed"
            )
        next_offset, epoch = raised[0] - total, raised[1]
        for batch in run:
            assigned[batch.byte_offset] = (next_offset, epoch)
            next_offset += batch.offset_count
    return assigned


def _batch_row(
    object_id: int,
    batch: PlacedBatch,
    assigned: tuple[int, int],
    timestamp_type: str,
    now_ms: int,
) -> dict[str, object]:
    """The diskless_batches row of a committed batch; ``assigned`` is (base offset, epoch)."""
    base, epoch = assigned
    return {
        "object_id": object_id,
        "byte_offset": batch.byte_offset,
        "byte_size": batch.byte_size,
        "topic_id": batch.topic_id,
        "partition": batch.partition,
        "base_offset": base,
        "last_offset": base + batch.offset_count - 1,
        "leader_epoch": epoch,
        "timestamp_type": timestamp_type,
        "batch_max_timestamp": batch.max_timestamp,
        "append_time_ms": now_ms,
    }


def _state_after_commit(used: int) -> str:
    """An object none of whose batches was committed is garbage at once (as in Inkless)."""
    return WalObjectState.COMMITTED.value if used else WalObjectState.DELETING.value


_COORDINATE_FIELDS = [name for name in BatchCoordinate.__dataclass_fields__ if name != "object_key"]


def _coordinates_query() -> Select:
    columns = [DisklessBatch.__table__.c[name] for name in _COORDINATE_FIELDS]  # type: ignore[attr-defined]
    return select(*columns, col(WalObject.object_key)).join(
        WalObject, col(WalObject.object_id) == col(DisklessBatch.object_id)
    )


def _coordinate(row: Mapping[str, Any]) -> BatchCoordinate:
    return BatchCoordinate(**{name: row[name] for name in BatchCoordinate.__dataclass_fields__})
