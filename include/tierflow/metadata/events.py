"""Appending to ``metadata_events``, always inside the caller's transaction.

The event row commits or rolls back together with the state change it records, so the
history can be replayed to rebuild the state (as Kafka rebuilds its cache from
``__remote_log_metadata``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum

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


def append_event(
    connection: Connection,
    *,
    entity: EventEntity,
    topic_id: str,
    to_state: str,
    actor: str,
    now_ms: int,
    partition: int | None = None,
    segment_id: str | None = None,
    from_state: str | None = None,
    details: Mapping[str, object] | None = None,
) -> None:
    connection.execute(
        insert(MetadataEvent).values(
            event_timestamp_ms=now_ms,
            entity=entity.value,
            topic_id=topic_id,
            partition=partition,
            segment_id=segment_id,
            from_state=None if from_state is None else str(from_state),
            to_state=str(to_state),
            actor=actor,
            details=None if details is None else json.dumps(details, sort_keys=True),
        )
    )
