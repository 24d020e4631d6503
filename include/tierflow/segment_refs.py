"""From a metadata row to what a storage manager needs: the bridge between store and bucket.

Kept apart from both sides so that neither the storage package nor the metadata package has
to know the other.
"""

from __future__ import annotations

from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.rsm import RemoteSegment


def remote_segment(topic: Topic, row: RemoteLogSegment) -> RemoteSegment:
    """Where a segment's objects are: topic name and id, partition, start offset, segment id.

    A topic deleted and then recreated under the same name keeps its old row under a retired
    name; its objects are still keyed by the Kafka name it had.
    """
    return RemoteSegment(
        topic=kafka_topic_name(topic.name),
        topic_id=topic.topic_id,
        partition=row.partition,
        segment_id=row.segment_id,
        start_offset=row.start_offset,
        end_offset=row.end_offset,
    )
