"""A ``__remote_log_metadata`` record value from its dataclass, and back.

What ``serialize`` writes, Kafka's ``RemoteLogMetadataSerde.deserialize`` reads to the same
fields (tests/kafka holds the two together); ``deserialize`` reads what a broker wrote, and
refuses what Kafka would refuse (another frame version, another apiKey or record version,
trailing bytes) with a ValueError that says what it found.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from kafka.protocol.api_data import ApiData

from tierflow.kafka import api_message
from tierflow.kafka.remote_log_metadata.records import (
    KIND,
    RECORD_VERSION,
    PartitionDelete,
    RemoteLogMetadata,
    RemoteLogSegmentMetadataRecord,
    RemoteLogSegmentMetadataUpdateRecord,
    RemotePartitionDeleteMetadataRecord,
    SegmentMetadata,
    SegmentUpdate,
    TopicIdPartition,
)
from tierflow.kafka.uuid import from_kafka_uuid, to_kafka_uuid

_SEGMENT = RemoteLogSegmentMetadataRecord
_UPDATE = RemoteLogSegmentMetadataUpdateRecord
_DELETE = RemotePartitionDeleteMetadataRecord
_CLASSES: dict[int, type[ApiData]] = {cls.API_KEY: cls for cls in (_SEGMENT, _UPDATE, _DELETE)}
# The state ids Kafka's RemoteLogSegmentState and RemotePartitionDeleteState know.
SEGMENT_STATES = range(4)
PARTITION_DELETE_STATES = range(3)


def serialize(record: RemoteLogMetadata) -> bytes:
    """The record's value, framed as Kafka frames it; ValueError for a record Kafka's serde
    would not read back as it is (see ``refusal``)."""
    why = refusal(record)
    if why is None and isinstance(record, SegmentMetadata):
        epochs = [epoch for epoch, _ in record.leader_epochs]
        if len(set(epochs)) != len(epochs):  # Kafka keeps one offset an epoch: the last
            why = f"leader epochs {record.leader_epochs} name an epoch twice"
    if why is not None:
        raise ValueError(f"{record.partition} cannot be published: {why}")
    try:
        return _encode(record)
    except struct.error as exc:  # a number outside its field's range (int8, int32, int64)
        raise ValueError(f"{record.partition} cannot be published: {exc}") from exc


def refusal(record: RemoteLogMetadata) -> str | None:
    """Why Kafka's deserializer refuses this record (its constructors' checks), or None."""
    if isinstance(record, PartitionDelete):
        return _state(record.state, PARTITION_DELETE_STATES)
    if isinstance(record, SegmentUpdate):
        return _state(record.state, SEGMENT_STATES)
    if record.start_offset < 0:
        return f"start offset {record.start_offset} is negative"
    if record.end_offset < record.start_offset:
        return f"end offset {record.end_offset} is below start offset {record.start_offset}"
    if not record.leader_epochs:
        return "no leader epochs"
    return _state(record.state, SEGMENT_STATES)


def _state(state: int, known: range) -> str | None:
    return None if state in known else f"state {state} is none of Kafka's ids {list(known)}"


def _encode(record: RemoteLogMetadata) -> bytes:
    if isinstance(record, SegmentMetadata):
        body: ApiData = _segment_body(record)
    elif isinstance(record, SegmentUpdate):
        body = _UPDATE(**_segment_body_fields(_UPDATE, record))
    else:
        body = _DELETE(
            version=RECORD_VERSION,
            topic_id_partition=_topic_id_partition(_DELETE, record.partition),
            broker_id=record.broker_id,
            event_timestamp_ms=record.event_timestamp_ms,
            remote_partition_delete_state=record.state,
        )
    return api_message.encode_framed(body, body.API_KEY)  # type: ignore[attr-defined]


def _segment_body(record: SegmentMetadata) -> ApiData:
    return _SEGMENT(
        **_segment_body_fields(_SEGMENT, record),
        start_offset=record.start_offset,
        end_offset=record.end_offset,
        max_timestamp_ms=record.max_timestamp_ms,
        segment_leader_epochs=[  # by epoch, as Kafka writes them from its sorted map
            _SEGMENT.SegmentLeaderEpochEntry(leader_epoch=epoch, offset=offset)
            for epoch, offset in sorted(record.leader_epochs, key=lambda pair: pair[0])
        ],
        segment_size_in_bytes=record.size_in_bytes,
        txn_index_empty=record.txn_index_empty,
    )


def _segment_body_fields(
    cls: type[ApiData], record: SegmentMetadata | SegmentUpdate
) -> dict[str, Any]:
    """The body fields a segment's metadata and its updates both carry, written alike."""
    return {
        "version": RECORD_VERSION,
        "remote_log_segment_id": _segment_id(cls, record.partition, record.segment_id),
        "broker_id": record.broker_id,
        "event_timestamp_ms": record.event_timestamp_ms,
        "custom_metadata": record.custom_metadata,
        "remote_log_segment_state": record.state,
    }


def _segment_id(cls: type[ApiData], partition: TopicIdPartition, segment_id: str) -> ApiData:
    entry = cls.RemoteLogSegmentIdEntry  # type: ignore[attr-defined]
    return entry(
        topic_id_partition=_topic_id_partition(entry, partition), id=from_kafka_uuid(segment_id)
    )


def _topic_id_partition(owner: type[ApiData], partition: TopicIdPartition) -> ApiData:
    return owner.TopicIdPartitionEntry(  # type: ignore[attr-defined]
        name=partition.topic, id=from_kafka_uuid(partition.topic_id), partition=partition.partition
    )


def deserialize(value: bytes) -> RemoteLogMetadata:
    """The record a value holds; ValueError for one Kafka's serde would not read either."""
    record = _decode(value)
    why = refusal(record)
    if why is not None:
        raise ValueError(f"{record.partition}: {why}")
    return record


def _decode(value: bytes) -> RemoteLogMetadata:
    frame = api_message.read_frame(value, KIND)
    cls = _CLASSES.get(frame.api_key)
    if cls is None:
        raise ValueError(f"unknown {KIND} apiKey {frame.api_key}")
    if frame.version != RECORD_VERSION:
        raise ValueError(f"unsupported version {frame.version} of {cls.__name__}")
    return _READERS[frame.api_key](api_message.decode_body(cls, frame))


def _segment_metadata(body: ApiData) -> SegmentMetadata:
    return SegmentMetadata(
        **_segment_record_fields(body),
        start_offset=body.start_offset,
        end_offset=body.end_offset,
        max_timestamp_ms=body.max_timestamp_ms,
        leader_epochs=tuple((e.leader_epoch, e.offset) for e in body.segment_leader_epochs),
        size_in_bytes=body.segment_size_in_bytes,
        txn_index_empty=bool(body.txn_index_empty),
    )


def _segment_update(body: ApiData) -> SegmentUpdate:
    return SegmentUpdate(**_segment_record_fields(body))


def _segment_record_fields(body: ApiData) -> dict[str, Any]:
    """The fields a segment's metadata and its updates both carry, read alike (the inverse
    of ``_segment_body_fields``)."""
    partition, segment_id = _ids(body.remote_log_segment_id)
    return {
        "partition": partition,
        "segment_id": segment_id,
        "broker_id": body.broker_id,
        "event_timestamp_ms": body.event_timestamp_ms,
        "state": body.remote_log_segment_state,
        "custom_metadata": body.custom_metadata,
    }


def _partition_delete(body: ApiData) -> PartitionDelete:
    return PartitionDelete(
        partition=_partition(body.topic_id_partition),
        broker_id=body.broker_id,
        event_timestamp_ms=body.event_timestamp_ms,
        state=body.remote_partition_delete_state,
    )


_READERS: dict[int, Callable[[ApiData], RemoteLogMetadata]] = {
    _SEGMENT.API_KEY: _segment_metadata,  # type: ignore[attr-defined]
    _UPDATE.API_KEY: _segment_update,  # type: ignore[attr-defined]
    _DELETE.API_KEY: _partition_delete,  # type: ignore[attr-defined]
}


def _ids(entry: ApiData) -> tuple[TopicIdPartition, str]:
    return _partition(entry.topic_id_partition), to_kafka_uuid(entry.id)


def _partition(entry: ApiData) -> TopicIdPartition:
    return TopicIdPartition(entry.name, to_kafka_uuid(entry.id), entry.partition)
