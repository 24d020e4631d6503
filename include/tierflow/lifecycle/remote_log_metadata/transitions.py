"""A transition in tierflow's history as the record a broker's RemoteLogManager writes for it.

A segment's COPY_SEGMENT_STARTED is the whole RemoteLogSegmentMetadata (offsets, epochs from
the leader-epoch cache, size, no custom metadata); each later state is an update carrying the
segment's custom metadata, as Kafka's copy and delete paths pass it on. The broker id is -1:
no broker wrote it (Kafka only logs this field). Retired topics go out under their Kafka name.
"""

from __future__ import annotations

from tierflow.kafka.remote_log_metadata.records import (
    PartitionDelete,
    RemoteLogMetadata,
    SegmentMetadata,
    SegmentUpdate,
    TopicIdPartition,
)
from tierflow.metadata.events import EventEntity
from tierflow.metadata.remote_log_metadata_store import PublishableEvent
from tierflow.metadata.states import RemoteLogSegmentState, RemotePartitionDeleteState
from tierflow.metadata.topic_registry import kafka_topic_name

NO_BROKER = -1
STARTED = RemoteLogSegmentState.COPY_SEGMENT_STARTED


def record_of(found: PublishableEvent) -> RemoteLogMetadata:
    event, topic, segment = found.event, found.topic, found.segment
    partition = event.partition if event.partition is not None else -1
    where = TopicIdPartition(kafka_topic_name(topic.name), topic.topic_id, partition)
    stamp = event.event_timestamp_ms
    if event.entity == EventEntity.PARTITION_DELETE.value:
        state = RemotePartitionDeleteState(event.to_state).id
        return PartitionDelete(where, NO_BROKER, stamp, state)
    if segment is None:
        raise ValueError(f"event {event.id}: segment {event.segment_id} has no row")
    state_id = RemoteLogSegmentState(event.to_state).id
    if event.to_state == STARTED:
        return SegmentMetadata(
            partition=where,
            segment_id=segment.segment_id,
            start_offset=segment.start_offset,
            end_offset=segment.end_offset,
            broker_id=NO_BROKER,
            max_timestamp_ms=segment.max_timestamp_ms,
            event_timestamp_ms=stamp,
            leader_epochs=tuple(segment.leader_epochs),
            size_in_bytes=segment.segment_size_bytes,
            state=state_id,
            txn_index_empty=segment.txn_index_empty,
        )
    custom = segment.custom_metadata
    return SegmentUpdate(where, segment.segment_id, NO_BROKER, stamp, state_id, custom)
