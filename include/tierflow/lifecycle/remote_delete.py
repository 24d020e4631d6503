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
from tierflow.segment_refs import remote_segment
from tierflow.storage.remote_storage_manager import RemoteStorageManager

log = logging.getLogger(__name__)


def delete_remote_segment(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    row: RemoteLogSegment,
    *,
    actor: str,
    now_ms: int,
) -> None:
    """Delete one segment's objects and finish its state; already deleted is a no-op."""
    if row.state == RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
        return
    store.transition_segment(
        row.segment_id, RemoteLogSegmentState.DELETE_SEGMENT_STARTED, actor=actor, now_ms=now_ms
    )
    crash_point("delete.after_started")
    rsm.delete_log_segment_data(remote_segment(topic, row))
    crash_point("delete.after_storage_delete")
    store.transition_segment(
        row.segment_id, RemoteLogSegmentState.DELETE_SEGMENT_FINISHED, actor=actor, now_ms=now_ms
    )
    crash_point("delete.after_finished")
    log.info("deleted remote segment %s of %s-%d", row.segment_id, topic.name, row.partition)
