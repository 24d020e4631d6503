"""Partitions: registration, forward-only start offsets, and the copy lease.

A lease is taken by an owner; taking it again under the same owner takes it over at once (a
cleared or later run replaces a killed one). Each taking gets a token, the lease's expiry, which
is never the same twice for one owner: writes that name the token (``Lease``) are fenced, so an
attempt whose lease was taken over, though still alive, can no longer write.

Another owner may take the lease once it is expired: the TTL is counted from when it was taken,
with the TTL the taker has configured, so TIERFLOW_COPY_LEASE_TTL_S applies to leases already
held (lowered after a kill, it frees them sooner; raised for long runs, it protects them
longer). Fencing, not the TTL, keeps the data safe: an expired holder that is taken over can no
longer write. A CLI run also records its process, and a rerun takes over a lease whose process
is provably gone (metadata.lease_holder).

Codes like L6 and E6 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

from sqlalchemy import ColumnElement, Connection, and_, case, exists, insert, or_, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from tierflow.metadata.errors import LeaseLostError, MetadataError
from tierflow.metadata.events import Event, EventEntity, Subject, append_event
from tierflow.metadata.lease_holder import HolderState, LeaseHolder
from tierflow.metadata.models import Partition, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState, TieredState
from tierflow.metadata.store_base import (
    MAX_ATTEMPTS,
    StoreBase,
    partition_key,
    update_and_record,
    update_one,
    wall_clock_ms,
)

log = logging.getLogger(__name__)

PARTITION_REGISTERED = "REGISTERED"
PARTITION_OFFSETS_ADVANCED = "OFFSETS_ADVANCED"
HIGHEST_REMOTE_OFFSET_RESET = "HIGHEST_REMOTE_OFFSET_RESET"
# What a release clears: the lease and everything recorded with its taking.
LEASE_COLUMNS = ("lease_owner", "lease_expires_ms", "lease_taken_ms", "lease_holder")


class Lease(NamedTuple):
    """One taking of a partition's lease: its owner and token (see the module doc)."""

    topic_id: str
    partition: int
    owner: str
    token: int


def hold_lease(connection: Connection, lease: Lease) -> None:
    """Fence the caller's transaction: LeaseLostError unless ``lease`` is still the current one.

    A write (an UPDATE that changes nothing), so it is the transaction's first statement and
    locks the partition row: a takeover either commits before it (and this fails) or waits
    until the caller's transaction has committed (and then sees what it wrote).
    """
    held = (
        *partition_key(Partition, lease.topic_id, lease.partition),
        col(Partition.lease_owner) == lease.owner,
        col(Partition.lease_expires_ms) == lease.token,
    )
    if not update_one(connection, Partition, held, {"lease_owner": lease.owner}):
        raise LeaseLostError(
            f"partition {lease.topic_id}-{lease.partition}: the lease of {lease.owner!r} was "
            "taken over by another attempt (a cleared or later run) or expired; not writing"
        )


class _Taking(NamedTuple):
    """Who takes a lease, when, for how long, and the process that will hold it (if any)."""

    owner: str
    now_ms: int
    ttl_ms: int
    holder: LeaseHolder | None


def _free_or_ours(taking: _Taking) -> ColumnElement[bool]:
    """The lease is free, expired by ``taking.ttl_ms`` from when it was taken (by its stored
    expiry if it was taken before that was recorded), or held by ``taking.owner``."""
    taken = col(Partition.lease_taken_ms)
    expires = col(Partition.lease_expires_ms)
    return or_(
        col(Partition.lease_owner).is_(None),
        expires.is_(None),
        and_(taken.is_not(None), taken <= taking.now_ms - taking.ttl_ms),
        and_(taken.is_(None), expires <= taking.now_ms),
        col(Partition.lease_owner) == taking.owner,
    )


def lease_until_ms(row: Partition, ttl_ms: int) -> int | None:
    """When another owner may take the row's lease, judged with ``ttl_ms`` as take_lease
    judges it; None when no lease is held."""
    if row.lease_owner is None:
        return None
    if row.lease_taken_ms is not None:
        return row.lease_taken_ms + ttl_ms
    return row.lease_expires_ms


class PartitionRegistry(StoreBase):
    def ensure_partition(
        self,
        topic_id: str,
        partition: int,
        *,
        log_start_offset: int,
        local_log_start_offset: int,
        actor: str = "tierflow",
        now_ms: int | None = None,
    ) -> Partition:
        """Register the partition, or move its start offsets forward (never back, as in Kafka)."""
        # No order between the two: DeleteRecords can put the log start offset inside the
        # first local segment, above that segment's base offset.
        if log_start_offset < 0 or local_log_start_offset < 0:
            raise ValueError(
                f"partition {topic_id}-{partition}: negative start offset "
                f"(log_start_offset={log_start_offset}, "
                f"local_log_start_offset={local_log_start_offset})"
            )
        now = wall_clock_ms() if now_ms is None else now_ms
        self.topic_by_id(topic_id)
        offsets = {
            "log_start_offset": log_start_offset,
            "local_log_start_offset": local_log_start_offset,
        }
        subject = Subject(EventEntity.PARTITION, topic_id, partition)
        for _ in range(MAX_ATTEMPTS):
            existing = self.partition(topic_id, partition)
            if existing is not None:
                self._advance_offsets(existing, offsets, actor=actor, now_ms=now)
                return self._require_partition(topic_id, partition)
            try:
                with self._write() as connection:
                    connection.execute(
                        insert(Partition).values(topic_id=topic_id, partition=partition, **offsets)
                    )
                    registered = Event(subject, PARTITION_REGISTERED, actor, now, details=offsets)
                    append_event(connection, registered)
            except IntegrityError:
                continue  # registered concurrently; the next pass advances it instead
            return self._require_partition(topic_id, partition)
        raise MetadataError(f"partition {topic_id}-{partition}: gave up after concurrent updates")

    def partitions(self, topic_id: str | None = None) -> list[Partition]:
        query = select(Partition)
        if topic_id is not None:
            query = query.where(col(Partition.topic_id) == topic_id)
        return self._all(query.order_by(col(Partition.topic_id), col(Partition.partition)))

    def acquire_lease(
        self, topic_id: str, partition: int, owner: str, *, now_ms: int, ttl_ms: int
    ) -> bool:
        """Take or renew the partition's lease; free, expired or already ours -> True."""
        return self.take_lease(topic_id, partition, owner, now_ms=now_ms, ttl_ms=ttl_ms) is not None

    def take_lease(
        self,
        topic_id: str,
        partition: int,
        owner: str,
        *,
        now_ms: int,
        ttl_ms: int,
        holder: LeaseHolder | None = None,
    ) -> Lease | None:
        """Take the partition's lease like ``acquire_lease``; the Lease, or None if another
        owner holds it. Its token differs from every earlier taking by ``owner``.

        Another owner's lease is expired once ``ttl_ms`` (the TTL configured now, not the one
        its holder had) has passed since it was taken. ``holder``: the calling process, which
        holds the lease for as long as it lives (a CLI run); it also takes over at once a lease
        whose recorded process is provably gone (lease_holder), in one conditional UPDATE on
        the lease it saw, so of two reruns only one gets it."""
        if ttl_ms <= 0:
            raise ValueError(f"lease ttl_ms must be positive, got {ttl_ms}")
        taking = _Taking(owner, now_ms, ttl_ms, holder)
        lease = self._take(topic_id, partition, taking, _free_or_ours(taking))
        if lease is not None or holder is None:
            return lease
        held = self._require_partition(topic_id, partition)
        gone = LeaseHolder.from_json(held.lease_holder)
        if held.lease_owner is None or gone is None or gone.state() is not HolderState.GONE:
            return None
        log.warning(
            "partition %s-%d: taking the lease of %r over: its process (%s) is gone",
            *(topic_id, partition, held.lease_owner, gone.describe()),
        )
        seen = (
            col(Partition.lease_owner) == held.lease_owner,
            col(Partition.lease_expires_ms) == held.lease_expires_ms,
        )
        return self._take(topic_id, partition, taking, and_(*seen))

    def _take(
        self, topic_id: str, partition: int, taking: _Taking, condition: ColumnElement[bool]
    ) -> Lease | None:
        """One conditional UPDATE taking the lease where ``condition`` holds; its token read
        back in the same transaction, so no takeover comes in between."""
        where = partition_key(Partition, topic_id, partition)
        current = col(Partition.lease_expires_ms)
        ours = col(Partition.lease_owner) == taking.owner
        expires = taking.now_ms + taking.ttl_ms
        holder = taking.holder
        with self._write() as connection:
            result = connection.execute(
                update(Partition)
                .where(*where, condition)
                .values(
                    lease_owner=taking.owner,
                    # A takeover within the old lease's time still gets a new token.
                    lease_expires_ms=case(
                        (ours & (current >= expires), current + 1), else_=expires
                    ),
                    lease_taken_ms=taking.now_ms,
                    lease_holder=None if holder is None else holder.to_json(),
                )
            )
            token = None
            if result.rowcount == 1:
                token = connection.execute(select(current).where(*where)).scalar_one()
        if token is None:
            self._require_partition(topic_id, partition)
            return None
        return Lease(topic_id, partition, taking.owner, int(token))

    def release_lease(
        self, topic_id: str, partition: int, owner: str, *, token: int | None = None
    ) -> bool:
        """Give the lease up if ``owner`` holds it (that taking of it, with ``token``); True
        when it did. A taken-over attempt releasing with its token leaves the new one alone."""
        conditions = [
            *partition_key(Partition, topic_id, partition),
            col(Partition.lease_owner) == owner,
        ]
        if token is not None:
            conditions.append(col(Partition.lease_expires_ms) == token)
        with self._write() as connection:
            return update_one(connection, Partition, conditions, dict.fromkeys(LEASE_COLUMNS))

    def record_iceberg_export(self, topic_id: str, ends: dict[int, int]) -> None:
        """Raise each partition's iceberg_exported_offset to the end committed to its table;
        one conditional UPDATE each: it never moves back."""
        with self.engine.begin() as connection:
            for partition, end in ends.items():
                connection.execute(
                    update(Partition)
                    .where(
                        Partition.topic_id == topic_id,
                        Partition.partition == partition,
                        Partition.iceberg_exported_offset < end,
                    )
                    .values(iceberg_exported_offset=end)
                )

    def record_remote_cleaned(self, topic_id: str, partition: int, end: int) -> bool:
        """Raise the partition's remote_cleaned_offset (the end of the range the remote
        compaction last compacted, its clean section) to ``end``; it never moves back."""
        conditions = [
            *partition_key(Partition, topic_id, partition),
            col(Partition.remote_cleaned_offset) < end,
        ]
        with self._write() as connection:
            return update_one(connection, Partition, conditions, {"remote_cleaned_offset": end})

    def reset_highest_remote_offset(
        self, topic_id: str, partition: int, *, actor: str, now_ms: int
    ) -> bool:
        """Forget how far copying got, after a disable-with-delete removed every segment.

        A re-enabled topic must then copy again from the log start (D3), and local retention
        must not take the old range as uploaded. Done only while the topic is DISABLING and no
        segment of the partition is live, checked in the same UPDATE; True if this call reset
        it.
        """
        existing = self._require_partition(topic_id, partition)
        if existing.highest_remote_offset < 0:
            return False
        live = exists().where(
            *partition_key(RemoteLogSegment, topic_id, partition),
            col(RemoteLogSegment.state) != RemoteLogSegmentState.DELETE_SEGMENT_FINISHED.value,
        )
        disabling = exists().where(
            col(Topic.topic_id) == topic_id,
            col(Topic.tiered_state) == TieredState.DISABLING.value,
        )
        read = (
            *partition_key(Partition, topic_id, partition),
            col(Partition.highest_remote_offset) == existing.highest_remote_offset,
            disabling,
            ~live,
        )
        subject = Subject(EventEntity.PARTITION, topic_id, partition)
        details = {"highest_remote_offset": [existing.highest_remote_offset, -1]}
        event = Event(subject, HIGHEST_REMOTE_OFFSET_RESET, actor, now_ms, details=details)
        with self._write() as connection:
            values = {"highest_remote_offset": -1}
            return update_and_record(connection, Partition, read, values, event)

    def advance_log_start_offset(
        self, topic_id: str, partition: int, offset: int, *, actor: str, now_ms: int
    ) -> bool:
        """Raise log_start_offset to ``offset``; True if this call moved it, False if already there.

        Kafka's maybeIncrementLogStartOffset (L6): the log start only moves forward, and the
        local log start is raised to at least the same value. The remote expiration task calls
        this before it deletes anything (E6), so readers never see a start offset below data
        that is being removed.
        """
        return self._raise_start(
            topic_id, partition, offset, log_start=True, actor=actor, now_ms=now_ms
        )

    def advance_local_log_start_offset(
        self, topic_id: str, partition: int, offset: int, *, actor: str, now_ms: int
    ) -> bool:
        """Raise local_log_start_offset to ``offset`` (never lower it); True if this call did.

        Local retention of a tiered topic moves only the local start (L5): the data still
        exists remotely, so log_start_offset stays. Called before any local file is removed.
        """
        return self._raise_start(
            topic_id, partition, offset, log_start=False, actor=actor, now_ms=now_ms
        )

    def _raise_start(
        self,
        topic_id: str,
        partition: int,
        offset: int,
        *,
        log_start: bool,
        actor: str,
        now_ms: int,
    ) -> bool:
        """One conditional UPDATE naming the offsets it read, so racing writers re-read."""
        name = "log_start_offset" if log_start else "local_log_start_offset"
        subject = Subject(EventEntity.PARTITION, topic_id, partition)
        for _ in range(MAX_ATTEMPTS):
            existing = self._require_partition(topic_id, partition)
            if offset <= getattr(existing, name):
                return False
            local = col(Partition.local_log_start_offset)
            values: dict[str, object] = {
                "local_log_start_offset": case((local < offset, offset), else_=local)
            }
            if log_start:
                values["log_start_offset"] = offset
            changed = {name: [getattr(existing, name), offset]}
            if log_start and existing.local_log_start_offset < offset:
                changed["local_log_start_offset"] = [existing.local_log_start_offset, offset]
            read = (
                *partition_key(Partition, topic_id, partition),
                col(Partition.log_start_offset) == existing.log_start_offset,
                local == existing.local_log_start_offset,
            )
            event = Event(subject, PARTITION_OFFSETS_ADVANCED, actor, now_ms, details=changed)
            with self._write() as connection:
                if update_and_record(connection, Partition, read, values, event):
                    return True
            # moved concurrently; re-read and decide again
        raise MetadataError(f"partition {topic_id}-{partition}: gave up after concurrent updates")

    def _advance_offsets(
        self, existing: Partition, offsets: dict[str, int], *, actor: str, now_ms: int
    ) -> None:
        wanted = {name: value for name, value in offsets.items() if value > getattr(existing, name)}
        if not wanted:
            return
        changed: dict[str, list[int]] = {}
        with self._write() as connection:
            for name, value in wanted.items():
                below = (
                    *partition_key(Partition, existing.topic_id, existing.partition),
                    col(getattr(Partition, name)) < value,
                )
                if update_one(connection, Partition, below, {name: value}):
                    changed[name] = [getattr(existing, name), value]
            if changed:
                subject = Subject(EventEntity.PARTITION, existing.topic_id, existing.partition)
                event = Event(subject, PARTITION_OFFSETS_ADVANCED, actor, now_ms, details=changed)
                append_event(connection, event)
