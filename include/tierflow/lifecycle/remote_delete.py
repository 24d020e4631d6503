"""Deleting one remote segment: DELETE_SEGMENT_STARTED, storage delete, DELETE_SEGMENT_FINISHED.

Every path that removes remote data (abandoned copies, retention, disablement, partition
removal) goes through here, so a delete interrupted at any point is finished by the next caller:
DELETE_SEGMENT_STARTED is durable intent, and the storage delete is idempotent.
"""

from __future__ import annotations

import logging

from tierflow.faults import crash_point
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.storage.remote_storage_manager import RemoteSegment, RemoteStorageManager

log = logging.getLogger(__name__)


def remote_segment(topic: Topic, row: RemoteLogSegment) -> RemoteSegment:
    return RemoteSegment(
        topic=topic.name,
        topic_id=topic.topic_id,
        partition=row.partition,
        segment_id=row.segment_id,
        start_offset=row.start_offset,
        end_offset=row.end_offset,
    )


def delete_remote_segment(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    row: RemoteLogSegment,
    *,
    actor: str,
    now_ms: int,
) -> None:
    store.transition_segment(
        row.segment_id, RemoteLogSegmentState.DELETE_SEGMENT_STARTED, actor=actor, now_ms=now_ms
    )
    crash_point("delete.after_started")
    rsm.delete_log_segment_data(remote_segment(topic, row))
    crash_point("delete.after_storage_delete")
    store.transition_segment(
        row.segment_id, RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, actor=actor, now_ms=now_ms
    )
    log.info("deleted remote segment %s of %s-%d", row.segment_id, topic.name, row.partition)
