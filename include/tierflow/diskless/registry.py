"""Which topics are diskless, and each diskless partition's log (start offsets, high watermark).

A diskless topic is a registered topic (``topics``) with a ``diskless_topics`` row: a separate
table rather than a column, because KIP-1163's ``diskless.enable`` is fixed at creation and
belongs to the coordinator, not to the tiering configs. Registering an existing topic (for
example one with tiered segments) starts its diskless logs at the offsets given: everything
below is then read from tiered storage.

As in ``tierflow.metadata.store_base``: reads happen outside write transactions, and every
write transaction starts with a write, so SQLite queues writers instead of failing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel, col, select

from tierflow.diskless.errors import NotDisklessTopicError, UnknownDisklessPartitionError
from tierflow.diskless.models import TIMESTAMP_TYPES, DisklessLog, DisklessTopic
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.events import Event, EventEntity, Subject, append_event
from tierflow.metadata.models import Topic
from tierflow.metadata.store_base import EngineBase, found_or_raise, partition_key, update_one

DISKLESS_REGISTERED = "DISKLESS_REGISTERED"


class DisklessRegistry(EngineBase):
    def register_topic(
        self,
        topic_id: str,
        partitions: int,
        *,
        now_ms: int,
        timestamp_type: str = "CreateTime",
        start_offsets: Mapping[int, int] | None = None,
        log_start_offsets: Mapping[int, int] | None = None,
        actor: str = "tierflow",
    ) -> DisklessTopic:
        """Make a registered topic diskless with ``partitions`` partitions; idempotent.

        Partitions that exist keep their logs; new ones get their first offset from
        ``start_offsets[p]`` (0 by default) and their log start offset from
        ``log_start_offsets[p]`` (default: the same). A topic whose older offsets are in tiered
        segments starts its WAL after them and keeps the tiered log start offset: reads in
        between go to tiered storage. The timestamp type (``message.timestamp.type``) cannot
        change afterwards.
        """
        starts = dict(start_offsets or {})
        log_starts = dict(log_start_offsets or {})
        _check_registration(partitions, timestamp_type, starts, log_starts)
        if self._get(Topic, topic_id) is None:
            raise UnknownTopicError(f"unknown topic id {topic_id!r}: register it first")
        existing = self.diskless_topic(topic_id)
        if existing is None:
            self._insert_topic(topic_id, timestamp_type, actor=actor, now_ms=now_ms)
            existing = self.require_diskless_topic(topic_id)
        if existing.timestamp_type != timestamp_type:
            raise ValueError(
                f"diskless topic {topic_id} has message.timestamp.type "
                f"{existing.timestamp_type}; it cannot change to {timestamp_type}"
            )
        have = {log.partition for log in self.logs(topic_id)}
        for partition in range(partitions):
            if partition not in have:
                start = starts.get(partition, 0)
                log_start = log_starts.get(partition, start)
                self._insert_log(topic_id, partition, start, log_start, now_ms)
        return existing

    def _insert_topic(self, topic_id: str, timestamp_type: str, *, actor: str, now_ms: int) -> None:
        """The diskless_topics row and its event, in one transaction; a concurrent
        registration of the same topic wins instead (the caller re-reads)."""
        details = {"timestamp_type": timestamp_type}
        subject = Subject(EventEntity.TOPIC, topic_id)
        event = Event(subject, DISKLESS_REGISTERED, actor, now_ms, details=details)
        row = {"topic_id": topic_id, "timestamp_type": timestamp_type, "created_ms": now_ms}
        self._insert_once(DisklessTopic, row, event)

    def _insert_log(
        self, topic_id: str, partition: int, start: int, log_start: int, now_ms: int
    ) -> None:
        row = {
            "topic_id": topic_id,
            "partition": partition,
            "log_start_offset": log_start,
            "diskless_start_offset": start,
            "high_watermark": start,
            "leader_epoch": 0,
            "byte_size": 0,
            "updated_ms": now_ms,
        }
        self._insert_once(DisklessLog, row)

    def _insert_once(
        self, table: type[SQLModel], row: dict[str, Any], event: Event | None = None
    ) -> None:
        """Insert ``row`` (and its event, in the same transaction) unless a concurrent
        registration inserted it first: the same row, so losing the race is no error."""
        try:
            with self._write() as connection:
                connection.execute(insert(table).values(**row))
                if event is not None:
                    append_event(connection, event)
        except IntegrityError:
            pass

    def diskless_topic(self, topic_id: str) -> DisklessTopic | None:
        return self._get(DisklessTopic, topic_id)

    def require_diskless_topic(self, topic_id: str) -> DisklessTopic:
        return found_or_raise(
            self.diskless_topic(topic_id),
            lambda: NotDisklessTopicError(f"topic id {topic_id} is not a diskless topic"),
        )

    def diskless_topics(self) -> list[DisklessTopic]:
        return self._all(select(DisklessTopic).order_by(col(DisklessTopic.topic_id)))

    def topic_id_of(self, name: str) -> str:
        """The id of the live topic called ``name``, which must be diskless."""
        topic = found_or_raise(
            self._first(select(Topic).where(col(Topic.name) == name)),
            lambda: UnknownTopicError(f"unknown topic {name!r}"),
        )
        self.require_diskless_topic(topic.topic_id)
        return topic.topic_id

    def topic_row(self, topic_id: str) -> Topic:
        """The topic's row in the metadata store: its name and retention configs."""
        return self.topic_by_id(topic_id)

    def log(self, topic_id: str, partition: int) -> DisklessLog:
        return found_or_raise(
            self._get(DisklessLog, (topic_id, partition)),
            lambda: UnknownDisklessPartitionError(
                f"no diskless partition {topic_id}-{partition}: register the topic as diskless"
            ),
        )

    def logs(self, topic_id: str | None = None) -> list[DisklessLog]:
        query = select(DisklessLog)
        if topic_id is not None:
            query = query.where(col(DisklessLog.topic_id) == topic_id)
        order = (col(DisklessLog.topic_id), col(DisklessLog.partition))
        return self._all(query.order_by(*order))

    def set_leader_epoch(self, topic_id: str, partition: int, epoch: int, *, now_ms: int) -> bool:
        """Move the partition's leader epoch forward (never back, as Kafka's epochs); batches
        committed from now on carry it. False when it already was at or past ``epoch``."""
        older = (
            *partition_key(DisklessLog, topic_id, partition),
            col(DisklessLog.leader_epoch) < epoch,
        )
        with self._write() as connection:
            moved = update_one(
                connection, DisklessLog, older, {"leader_epoch": epoch, "updated_ms": now_ms}
            )
        if not moved:
            self.log(topic_id, partition)  # raises when the partition does not exist
        return moved


def _check_registration(
    partitions: int, timestamp_type: str, starts: dict[int, int], log_starts: dict[int, int]
) -> None:
    """Refuse a registration whose arguments could never make valid logs."""
    if timestamp_type not in TIMESTAMP_TYPES:
        raise ValueError(f"message.timestamp.type must be one of {TIMESTAMP_TYPES}")
    if partitions < 1:
        raise ValueError(f"a diskless topic needs at least one partition, not {partitions}")
    for partition, offset in log_starts.items():
        if not 0 <= offset <= starts.get(partition, 0):
            raise ValueError(
                f"partition {partition}: log start offset {offset} must lie between 0 and "
                f"its first diskless offset {starts.get(partition, 0)}"
            )
    if any(offset < 0 for offset in starts.values()):
        raise ValueError(f"negative start offset in {starts}")
