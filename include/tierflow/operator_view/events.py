"""The latest entries of the event history, newest first, with topic names and task instances."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func
from sqlmodel import Session, col, select

from tierflow.metadata.models import MetadataEvent, Topic
from tierflow.metadata.store import MetadataStore
from tierflow.operator_view.model import EventView
from tierflow.tasks.attribution import task_instance_of


def latest_events(
    store: MetadataStore,
    topics: Sequence[Topic],
    *,
    limit: int,
    partition: int | None = None,
) -> list[EventView]:
    """The newest ``limit`` events of the topics (of one partition number, if given)."""
    names = {t.topic_id: t.name for t in topics}
    if not names or limit <= 0:
        return []
    event = MetadataEvent
    query = (
        select(event)
        .where(col(event.topic_id).in_(list(names)))
        .order_by(col(event.id).desc())
        .limit(limit)
    )
    if partition is not None:
        query = query.where(col(event.partition) == partition)
    with Session(store.engine) as session:
        rows = list(session.exec(query).all())
    return [
        EventView(
            id=int(row.id or 0),
            time_ms=row.event_timestamp_ms,
            entity=row.entity,
            topic=names[row.topic_id],
            partition=row.partition,
            segment_id=row.segment_id,
            from_state=row.from_state,
            to_state=row.to_state,
            actor=row.actor,
            task_instance=task_instance_of(row.actor),
        )
        for row in rows
    ]


def count_events(
    store: MetadataStore, topics: Sequence[Topic], *, partition: int | None = None
) -> int:
    """All the events ``latest_events`` chooses from: the page says how many it leaves out."""
    ids = [t.topic_id for t in topics]
    if not ids:
        return 0
    event = MetadataEvent
    query = select(func.count()).where(col(event.topic_id).in_(ids))
    if partition is not None:
        query = query.where(col(event.partition) == partition)
    with store.engine.connect() as connection:
        return int(connection.execute(query).scalar_one())
