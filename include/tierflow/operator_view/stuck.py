"""Segments stuck in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED, and who started them.

A STARTED state is meant to last minutes: a copy being uploaded, a delete being carried out.
One that lasts longer than the threshold is a copy whose task died (the next copy run of the
partition cleans it up) or a delete that failed (the next retention run retries it). Each is
shown with the event that put it there, whose actor names the Airflow task instance.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import Session, col, select

from tierflow.lifecycle.copy_liveness import copy_lease_live
from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import MetadataEvent, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.operator_view.model import StuckSegment
from tierflow.tasks.attribution import task_instance_of

STARTED_STATES = (
    RemoteLogSegmentState.COPY_SEGMENT_STARTED.value,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED.value,
)
MAX_SHOWN = 500


def stuck_segments(
    store: MetadataStore,
    topics: Sequence[Topic],
    *,
    now_ms: int,
    stuck_after_s: int,
    partition: int | None = None,
    limit: int = MAX_SHOWN,
) -> list[StuckSegment]:
    """Segments that entered a STARTED state more than ``stuck_after_s`` ago, oldest first."""
    names = {t.topic_id: t.name for t in topics}
    if not names:
        return []
    seg = RemoteLogSegment
    query = (
        select(seg)
        .where(
            col(seg.topic_id).in_(list(names)),
            col(seg.state).in_(STARTED_STATES),
            col(seg.event_timestamp_ms) < now_ms - stuck_after_s * 1000,
        )
        .order_by(col(seg.event_timestamp_ms), col(seg.segment_id))
        .limit(limit)
    )
    if partition is not None:
        query = query.where(col(seg.partition) == partition)
    with Session(store.engine) as session:
        rows = list(session.exec(query).all())
    found = []
    for row in rows:
        actor = _actor_of_state(store, row)
        lease = store.partition(row.topic_id, row.partition)
        found.append(
            StuckSegment(
                topic=names[row.topic_id],
                partition=row.partition,
                segment_id=row.segment_id,
                state=row.state,
                start_offset=row.start_offset,
                end_offset=row.end_offset,
                size_bytes=row.segment_size_bytes,
                since_ms=row.event_timestamp_ms,
                age_ms=now_ms - row.event_timestamp_ms,
                actor=actor,
                task_instance=task_instance_of(actor),
                lease_owner=lease.lease_owner if lease else None,
                lease_live=copy_lease_live(lease, now_ms),
            )
        )
    return found


def _actor_of_state(store: MetadataStore, row: RemoteLogSegment) -> str:
    """Who moved the segment into its current state: that event's actor (else its owner)."""
    event = MetadataEvent
    query = (
        select(col(event.actor))
        .where(
            col(event.segment_id) == row.segment_id,
            col(event.entity) == EventEntity.SEGMENT.value,
            col(event.to_state) == row.state,
        )
        .order_by(col(event.id).desc())
        .limit(1)
    )
    with store.engine.connect() as connection:
        actor = connection.execute(query).scalar()
    return str(actor) if actor is not None else row.owner
