"""The records of ``__remote_log_metadata``, as Kafka's ``RemoteLogMetadataSerde`` writes them.

Three kinds go on the topic (apiKey 0 to 2): a segment's metadata when its copy starts, an
update for each later state of the segment, and a partition-delete state. Each value is framed
as ``tierflow.kafka.api_message`` frames it (version 1, apiKey, record version 0), its body coded
by kafka-python's ``ApiData`` from ``schemas/``. Records carry no key.

The dataclasses are what the rest of tierflow passes around: ids in Kafka's 22-character form,
states as the one byte Kafka writes (``tierflow.metadata.states`` names them).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka.protocol.api_data import ApiData

from tierflow.kafka.remote_log_metadata import schemas

KIND = "remote log metadata"
RECORD_VERSION = 0  # the only version Kafka has released


class RemoteLogSegmentMetadataRecord(ApiData, load_json=schemas):
    API_KEY = 0


class RemoteLogSegmentMetadataUpdateRecord(ApiData, load_json=schemas):
    API_KEY = 1


class RemotePartitionDeleteMetadataRecord(ApiData, load_json=schemas):
    API_KEY = 2


@dataclass(frozen=True)
class TopicIdPartition:
    topic: str
    topic_id: str  # Kafka's 22-character Uuid
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class SegmentMetadata:
    """RemoteLogSegmentMetadataRecord: a segment as its copy starts (COPY_SEGMENT_STARTED)."""

    partition: TopicIdPartition
    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    leader_epochs: tuple[tuple[int, int], ...]  # (epoch, start offset), the first at start_offset
    size_in_bytes: int
    state: int
    custom_metadata: bytes | None = None
    txn_index_empty: bool = False


@dataclass(frozen=True)
class SegmentUpdate:
    """RemoteLogSegmentMetadataUpdateRecord: a segment's later state."""

    partition: TopicIdPartition
    segment_id: str
    broker_id: int
    event_timestamp_ms: int
    state: int
    custom_metadata: bytes | None = None


@dataclass(frozen=True)
class PartitionDelete:
    """RemotePartitionDeleteMetadataRecord: a partition's delete state."""

    partition: TopicIdPartition
    broker_id: int
    event_timestamp_ms: int
    state: int


RemoteLogMetadata = SegmentMetadata | SegmentUpdate | PartitionDelete
