"""Appending to ``metadata_events``, always inside the caller's transaction.

The event row commits or rolls back together with the state change it records, so the
history can be replayed to rebuild the state (as Kafka rebuilds its cache from
``__remote_log_metadata``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

from sqlalchemy import Connection, insert

from tierflow.metadata.models import MetadataEvent


class EventEntity(StrEnum):
    SEGMENT = "segment"
    PARTITION_DELETE = "partition_delete"
    TOPIC = "topic"
    PARTITION = "partition"
    # An object of a segment rewritten in place (a re-wrapped manifest). Not a state change, so
    # replays of the segment history (entity "segment") never see it.
    SEGMENT_OBJECT = "segment_object"
    # A partition written back from remote storage into a log dir (tierflow.restore): history,
    # not a state change.
    RESTORE = "restore"
    # The scrubber's verdict on a segment changed: a finding opened, or closed by a check that
    # passed (tierflow.lifecycle.scrub). History, not a state change.
    SCRUB = "scrub"


class Subject(NamedTuple):
    """What an event is about: a topic, one of its partitions, or a segment of one."""

    entity: EventEntity
    topic_id: str
    partition: int | None = None
    segment_id: str | None = None


@dataclass(frozen=True)
class Event:
    """One row of the history: ``subject`` moved to ``to_state`` (from ``from_state``, None
    when it came into being), written by ``actor`` at ``now_ms``."""

    subject: Subject
    to_state: str
    actor: str
    now_ms: int
    from_state: str | None = None
    details: Mapping[str, object] | None = None


def append_event(connection: Connection, event: Event) -> None:
    """Insert ``event`` in the caller's transaction (see the module doc)."""
    subject, from_state, details = event.subject, event.from_state, event.details
    connection.execute(
        insert(MetadataEvent).values(
            event_timestamp_ms=event.now_ms,
            entity=subject.entity.value,
            topic_id=subject.topic_id,
            partition=subject.partition,
            segment_id=subject.segment_id,
            from_state=None if from_state is None else str(from_state),
            to_state=str(event.to_state),
            actor=event.actor,
            details=None if details is None else json.dumps(details, sort_keys=True),
        )
    )
