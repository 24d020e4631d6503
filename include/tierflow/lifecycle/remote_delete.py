"""Deleting one remote segment: DELETE_SEGMENT_STARTED, storage delete, DELETE_SEGMENT_FINISHED.

Every path that removes remote data (abandoned copies, retention, disablement, partition
removal) goes through here, so a delete interrupted at any point is finished by the next caller:
DELETE_SEGMENT_STARTED is durable intent, and the storage delete is idempotent.

Two callers may delete the same segment at once (overlapping retention runs, two disablement
completions): each transition is recorded once, by whichever gets there first, and the other
caller finishes or skips without error. Only the caller that records DELETE_SEGMENT_FINISHED
counts the segment as deleted by it.
"""

from __future__ import annotations

import logging

from tierflow.faults import crash_point
from tierflow.metadata.errors import InvalidStateTransition
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.partition_registry import Lease
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore, SegmentTransition
from tierflow.rsm import RemoteStorageManager
from tierflow.segment_refs import remote_segment

log = logging.getLogger(__name__)


def delete_remote_segment(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    row: RemoteLogSegment,
    *,
    actor: str,
    now_ms: int,
    abandoned: bool = False,
    lease: Lease | None = None,
) -> bool:
    """Delete one segment's objects and finish its state.

    True if this call recorded DELETE_SEGMENT_FINISHED; False if another caller did (or had).
    ``abandoned``: ``row`` was judged an abandoned attempt in the state it was read in; if it
    has since become COPY_SEGMENT_FINISHED, it is data and is left alone (False). ``lease``:
    DELETE_SEGMENT_STARTED is recorded only while that lease is still held (LeaseLostError).
    """
    if row.state == S.DELETE_SEGMENT_FINISHED:
        return False
    only_from = {S(row.state), S.DELETE_SEGMENT_STARTED} if abandoned else None
    try:
        store.transition_segment(
            SegmentTransition(row.segment_id, S.DELETE_SEGMENT_STARTED, only_from=only_from),
            actor=actor,
            now_ms=now_ms,
            lease=lease,
        )
    except InvalidStateTransition:
        now = store.segment(row.segment_id).state
        if now == S.DELETE_SEGMENT_FINISHED:
            return False  # another caller deleted it meanwhile
        if abandoned and now == S.COPY_SEGMENT_FINISHED:
            log.warning("not deleting segment %s: its copy finished after all", row.segment_id)
            return False
        raise
    crash_point("delete.after_started")
    rsm.delete_log_segment_data(remote_segment(topic, row))
    crash_point("delete.after_storage_delete")
    finished = store.transition_segment(
        SegmentTransition(row.segment_id, S.DELETE_SEGMENT_FINISHED), actor=actor, now_ms=now_ms
    )
    crash_point("delete.after_finished")
    if finished:
        log.info("deleted remote segment %s of %s-%d", row.segment_id, topic.name, row.partition)
    return finished
