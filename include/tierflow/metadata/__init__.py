"""The metadata store: Kafka's remote-log metadata state machines on SQL (SQLite or PostgreSQL).

It plays the part of Kafka's RemoteLogMetadataManager with ``__remote_log_metadata`` replaced
by the append-only ``metadata_events`` table; every transition is one atomic conditional UPDATE.
"""

from tierflow.metadata.errors import (
    InvalidConfigError,
    InvalidStateTransition,
    MetadataError,
    TieredStorageDisablementInProgressError,
    TopicConflictError,
    UnknownPartitionError,
    UnknownSegmentError,
    UnknownTopicError,
)
from tierflow.metadata.log_config import TopicConfig, parse_kafka_configs
from tierflow.metadata.models import (
    MetadataEvent,
    Partition,
    RemoteLogSegment,
    RemotePartitionDelete,
    RemoteSegmentObject,
    SegmentObjectKind,
    Topic,
)
from tierflow.metadata.states import (
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
    TieredState,
    is_valid_partition_delete_transition,
    is_valid_segment_transition,
    is_valid_tiered_transition,
)
from tierflow.metadata.store import (
    CompactedSegment,
    MetadataStore,
    SegmentObject,
    SegmentTransition,
    StartedSegment,
)

__all__ = [
    "CompactedSegment",
    "InvalidConfigError",
    "InvalidStateTransition",
    "MetadataError",
    "MetadataEvent",
    "MetadataStore",
    "Partition",
    "RemoteLogSegment",
    "RemoteLogSegmentState",
    "RemotePartitionDelete",
    "RemotePartitionDeleteState",
    "RemoteSegmentObject",
    "SegmentObject",
    "SegmentObjectKind",
    "SegmentTransition",
    "StartedSegment",
    "TieredState",
    "TieredStorageDisablementInProgressError",
    "Topic",
    "TopicConfig",
    "TopicConflictError",
    "UnknownPartitionError",
    "UnknownSegmentError",
    "UnknownTopicError",
    "is_valid_partition_delete_transition",
    "is_valid_segment_transition",
    "is_valid_tiered_transition",
    "parse_kafka_configs",
]
