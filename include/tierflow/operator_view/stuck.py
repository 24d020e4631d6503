"""Segments stuck in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED, and who started them.

A STARTED state is meant to last minutes: a copy being uploaded, a delete being carried out.
One that lasts longer than the threshold is a copy whose task died (the next copy run of the
partition cleans it up) or a delete that failed (the next retention run retries it). Each is
shown with the event that put it there, whose actor names the Airflow task instance.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import func, tuple_
from sqlmodel import Session, col, select
from sqlmodel.sql.expression import SelectOfScalar

from tierflow.lifecycle.copy.liveness import copy_lease_live
from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import MetadataEvent, Partition, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.operator_view.model import StuckSegment
from tierflow.tasks.attribution import task_instance_of

STARTED_STATES = (
    RemoteLogSegmentState.COPY_SEGMENT_STARTED.value,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED.value,
)
MAX_SHOWN = 100  # the oldest; the page says how many more there are


def stuck_segments(
    store: MetadataStore,
    topics: Sequence[Topic],
    *,
    now_ms: int,
    stuck_after_s: int,
    partition: int | None = None,
    limit: int = MAX_SHOWN,
) -> list[StuckSegment]:
    """Segments that entered a STARTED state more than ``stuck_after_s`` ago, oldest first,
    then in offset order (a copy starts a partition's segments in one transaction).

    Three queries whatever the number shown: the segments, the events that put them in their
    states, and their partitions' copy leases.
    """
    names = {t.topic_id: t.name for t in topics}
    if not names or limit <= 0:
        return []
    seg = RemoteLogSegment
    query = (
        _stuck_query(select(seg), names, now_ms, stuck_after_s, partition)
        .order_by(
            col(seg.event_timestamp_ms),
            col(seg.topic_id),
            col(seg.partition),
            col(seg.start_offset),
            col(seg.segment_id),
        )
        .limit(limit)
    )
    with Session(store.engine) as session:
        rows = list(session.exec(query).all())
    actors = _actors_of_states(store, rows)
    leases = _leases(store, {(row.topic_id, row.partition) for row in rows})
    return [
        _stuck_segment(
            row,
            names[row.topic_id],
            actors.get(row.segment_id, row.owner),
            leases.get((row.topic_id, row.partition)),
            now_ms,
        )
        for row in rows
    ]


def _stuck_segment(
    row: RemoteLogSegment, topic: str, actor: str, lease: Partition | None, now_ms: int
) -> StuckSegment:
    """One stuck segment as the page shows it: ``actor`` moved it into its state, ``lease``
    is its partition's copy lease (a live one: the copy may still be running)."""
    return StuckSegment(
        topic=topic,
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


def count_stuck(
    store: MetadataStore,
    topics: Sequence[Topic],
    *,
    now_ms: int,
    stuck_after_s: int,
    partition: int | None = None,
) -> int:
    """How many segments ``stuck_segments`` would list without a limit."""
    names = {t.topic_id: t.name for t in topics}
    if not names:
        return 0
    query = _stuck_query(select(func.count()), names, now_ms, stuck_after_s, partition)
    with store.engine.connect() as connection:
        return int(connection.execute(query).scalar_one())


def _stuck_query(
    query: SelectOfScalar, names: dict[str, str], now_ms: int, after_s: int, partition: int | None
) -> SelectOfScalar:
    seg = RemoteLogSegment
    query = query.where(
        col(seg.topic_id).in_(list(names)),
        col(seg.state).in_(STARTED_STATES),
        col(seg.event_timestamp_ms) < now_ms - after_s * 1000,
    )
    if partition is not None:
        query = query.where(col(seg.partition) == partition)
    return query


def _actors_of_states(store: MetadataStore, rows: Sequence[RemoteLogSegment]) -> dict[str, str]:
    """Who moved each segment into its current state: that event's actor (the newest, should
    a state repeat). A segment without such an event keeps its owner as the actor."""
    if not rows:
        return {}
    state_of = {row.segment_id: row.state for row in rows}
    event = MetadataEvent
    query = (
        select(col(event.segment_id), col(event.to_state), col(event.actor))
        .where(
            col(event.segment_id).in_(list(state_of)),
            col(event.entity) == EventEntity.SEGMENT.value,
        )
        .order_by(col(event.id))
    )
    found: dict[str, str] = {}
    with store.engine.connect() as connection:
        for segment_id, to_state, actor in connection.execute(query).all():
            if state_of.get(segment_id) == to_state:
                found[segment_id] = str(actor)
    return found


def _leases(store: MetadataStore, keys: set[tuple[str, int]]) -> dict[tuple[str, int], Partition]:
    if not keys:
        return {}
    p = Partition
    query = select(p).where(tuple_(col(p.topic_id), col(p.partition)).in_(sorted(keys)))
    with Session(store.engine) as session:
        return {(row.topic_id, row.partition): row for row in session.exec(query).all()}
