"""The store's side of ``__remote_log_metadata``: the outbox, the positions, the copier.

The history (``metadata_events``) is the source: each transition of a tierflow-copied topic
becomes one outbox row holding the record a broker would write, and stays there, marked with
its offset once the metadata topic has it. Rows are made in event order, so a publisher that
sends them in that order keeps Kafka's order per partition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, and_, exists, func, insert, or_, update
from sqlmodel import col, select

from tierflow.metadata.errors import MetadataError
from tierflow.metadata.events import Event, EventEntity, Subject
from tierflow.metadata.models import (
    BROKER_COPIER,
    TIERFLOW_COPIER,
    MetadataEvent,
    RemoteLogMetadataOutbox,
    RemoteLogMetadataPosition,
    RemoteLogSegment,
    Topic,
)
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store_base import StoreBase, update_and_record

TIERFLOW, BROKER = TIERFLOW_COPIER, BROKER_COPIER
COPIERS = (TIERFLOW, BROKER)
OUTBOX_POSITION = "outbox"  # the id of the last event the outbox has looked at


@dataclass(frozen=True)
class PublishableEvent:
    """A transition of a tierflow-copied topic, with what its record is built from."""

    event: MetadataEvent
    topic: Topic
    segment: RemoteLogSegment | None  # None for a partition-delete transition


@dataclass(frozen=True)
class OutboxEntry:
    event_id: int
    topic_id: str
    partition: int
    metadata_partition: int
    payload: bytes


class RemoteLogMetadataStore(StoreBase):
    def set_copier(self, topic_id: str, copier: str, *, actor: str, now_ms: int) -> bool:
        """The topic's copier becomes ``copier`` (an event records it); False if it already was."""
        if copier not in COPIERS:
            raise MetadataError(f"copier must be one of {', '.join(COPIERS)}, not {copier!r}")
        current = self.topic_by_id(topic_id).copier
        if current == copier:
            return False
        where = (col(Topic.topic_id) == topic_id, col(Topic.copier) == current)
        subject = Subject(EventEntity.TOPIC, topic_id)
        event = Event(subject, f"COPIER_{copier.upper()}", actor, now_ms, details={"was": current})
        with self._write() as connection:
            values = {"copier": copier, "updated_ms": now_ms}
            if not update_and_record(connection, Topic, where, values, event):
                raise MetadataError(f"topic {topic_id}: its copier changed while being set")
        return True

    def publishable_events(self, after_id: int, limit: int) -> list[PublishableEvent]:
        """Transitions after ``after_id`` not in the outbox yet, in the order written: of the
        segments tierflow wrote (also once their topic is handed over: the hand-over publishes
        them then), and partition deletes of the topics tierflow copies."""
        query = _publishable(select(MetadataEvent, Topic, RemoteLogSegment), after_id)
        with self._session() as session:
            rows = session.exec(query.order_by(col(MetadataEvent.id)).limit(limit)).all()
        return [PublishableEvent(event, topic, segment) for event, topic, segment in rows]

    def oldest_waiting_started(self) -> int | None:
        """The oldest event id of a COPY_SEGMENT_STARTED held back (``_started_still``): the
        outbox looks again from there, however far its position has moved on."""
        query = (
            select(func.min(col(MetadataEvent.id)))
            .select_from(RemoteLogSegment)
            .join(MetadataEvent, col(MetadataEvent.segment_id) == col(RemoteLogSegment.segment_id))
            .where(col(RemoteLogSegment.writer) == TIERFLOW)
            .where(_started_still())
        )
        with self._session() as session:
            found = session.exec(query).one()
        return None if found is None else int(found)

    def waiting_of(self, topic_id: str) -> int:
        """The topic's transitions not on the metadata topic yet: in the outbox unpublished, or
        not in it at all."""
        outbox = RemoteLogMetadataOutbox
        queued = select(func.count()).where(
            col(outbox.topic_id) == topic_id, col(outbox.published_offset).is_(None)
        )
        found = _publishable(select(func.count(col(MetadataEvent.id))), 0).where(
            col(MetadataEvent.topic_id) == topic_id
        )
        with self._session() as session:
            return int(session.exec(queued).one()) + int(session.exec(found).one())

    def last_event_id(self) -> int:
        """The newest event's id (0 for none): where the outbox has looked once it is current."""
        with self._session() as session:
            return int(session.exec(select(func.max(col(MetadataEvent.id)))).one() or 0)

    def position(self, name: str) -> int | None:
        found = self._get(RemoteLogMetadataPosition, name)
        return None if found is None else found.position

    def positions_named(self, prefix: str) -> list[str]:
        query = select(RemoteLogMetadataPosition.name).where(
            col(RemoteLogMetadataPosition.name).startswith(prefix)
        )
        with self._session() as session:
            return list(session.exec(query).all())

    def set_positions(self, positions: dict[str, int]) -> None:
        with self._write() as connection:
            for name, position in positions.items():
                _set_position(connection, name, position)

    def enqueue(self, entries: Iterable[OutboxEntry], *, looked_through: int) -> None:
        """The entries, and the outbox's position (the last event it looked at): one
        transaction, so an entry is made exactly once whatever is killed."""
        rows = [entry.__dict__ for entry in entries]
        with self._write() as connection:
            _set_position(connection, OUTBOX_POSITION, looked_through)
            if rows:
                connection.execute(insert(RemoteLogMetadataOutbox), rows)

    def unpublished(self, limit: int) -> list[RemoteLogMetadataOutbox]:
        query = (
            select(RemoteLogMetadataOutbox)
            .where(col(RemoteLogMetadataOutbox.published_offset).is_(None))
            .order_by(col(RemoteLogMetadataOutbox.event_id))
            .limit(limit)
        )
        return self._all(query)

    def published_through(self, metadata_partition: int) -> int:
        """The highest offset of the metadata partition the outbox knows it has (-1: none)."""
        query = select(func.max(col(RemoteLogMetadataOutbox.published_offset))).where(
            col(RemoteLogMetadataOutbox.metadata_partition) == metadata_partition
        )
        with self._session() as session:
            found = session.exec(query).one()
        return -1 if found is None else int(found)

    def mark_published(self, offsets: Iterable[tuple[int, int]]) -> None:
        """(event id, offset in the metadata topic) for each entry the topic now has."""
        with self._write() as connection:
            for event_id, offset in offsets:
                connection.execute(
                    update(RemoteLogMetadataOutbox)
                    .where(col(RemoteLogMetadataOutbox.event_id) == event_id)
                    .values(published_offset=offset)
                )

    def outbox_depth(self) -> int:
        """How many entries wait to be published."""
        query = select(func.count()).where(col(RemoteLogMetadataOutbox.published_offset).is_(None))
        with self._session() as session:
            return int(session.exec(query).one())


def _publishable(query: Any, after_id: int) -> Any:
    """``query`` narrowed to the publishable transitions after ``after_id`` (see
    ``publishable_events``), with the topic and the segment joined."""
    kinds = (EventEntity.SEGMENT.value, EventEntity.PARTITION_DELETE.value)
    partition_delete = and_(
        col(MetadataEvent.entity) == EventEntity.PARTITION_DELETE.value,
        col(Topic.copier) == TIERFLOW,
    )
    tierflows_segment = and_(
        col(MetadataEvent.entity) == EventEntity.SEGMENT.value,
        col(RemoteLogSegment.writer) == TIERFLOW,
        ~_started_still(),
    )
    return (
        query.select_from(MetadataEvent)
        .join(Topic, col(Topic.topic_id) == col(MetadataEvent.topic_id))
        .outerjoin(
            RemoteLogSegment, col(RemoteLogSegment.segment_id) == col(MetadataEvent.segment_id)
        )
        .where(col(MetadataEvent.id) > after_id)
        .where(~exists().where(col(RemoteLogMetadataOutbox.event_id) == col(MetadataEvent.id)))
        .where(col(MetadataEvent.entity).in_(kinds))
        .where(or_(partition_delete, tierflows_segment))
    )


def _started_still() -> Any:
    """A COPY_SEGMENT_STARTED whose segment is still being copied: its record waits. The row's
    largest timestamp and leader epochs are final only once the copy has read the batches
    (FINISHED, or abandoned), and Kafka's STARTED record carries them."""
    started = RemoteLogSegmentState.COPY_SEGMENT_STARTED.value
    return and_(col(MetadataEvent.to_state) == started, col(RemoteLogSegment.state) == started)


def _set_position(connection: Connection, name: str, position: int) -> None:
    """Upsert by update-then-insert: both SQLite and PostgreSQL, inside the caller's write."""
    table = RemoteLogMetadataPosition
    done = connection.execute(
        update(table).where(col(table.name) == name).values(position=position)
    )
    if done.rowcount == 0:
        connection.execute(insert(table).values(name=name, position=position))
