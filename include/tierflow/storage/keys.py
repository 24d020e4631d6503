"""Object keys of remote segments, in the layout of Aiven's tiered-storage plugin.

``<prefix><topic>-<topicId>/<partition>/<20-digit start offset>-<segmentId>.<suffix>``

Topic names are checked against Kafka's legal characters first: a name is part of every key,
and a name like ``../x`` must never reach a path or an object key.
"""

from __future__ import annotations

import re

from tierflow.ids import is_kafka_uuid
from tierflow.rsm import RemoteSegment

_TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")  # fullmatch: "$" would allow a final "\n"


class InvalidTopicNameError(ValueError):
    """A topic name Kafka would refuse; it never reaches a key, a path or a row."""


class InvalidTopicIdError(ValueError):
    """A topic id that is not Kafka's 22-character Uuid text; it is part of every key too."""


def validate_topic_name(topic: str) -> str:
    """Kafka's rule (Topic.validate): 1-249 of [a-zA-Z0-9._-], and not '.' or '..'."""
    if topic in (".", "..") or not _LEGAL_TOPIC.fullmatch(topic):
        raise InvalidTopicNameError(
            f"illegal topic name {topic!r}: Kafka allows 1-249 characters of [a-zA-Z0-9._-], "
            "and neither '.' nor '..'"
        )
    return topic


def validate_topic_id(topic: str, topic_id: str) -> str:
    """Kafka's Uuid text form (22 URL-safe base64 characters, 16 bytes), exactly: a final
    newline passes ``is_kafka_uuid`` (its "$" allows one) but must not reach a key."""
    if not _TOPIC_ID.fullmatch(topic_id) or not is_kafka_uuid(topic_id):
        raise InvalidTopicIdError(f"topic {topic}: invalid topic id {topic_id!r}")
    return topic_id


def normalize_prefix(prefix: str) -> str:
    """A prefix is either empty or ends with '/'; it never starts with one."""
    prefix = prefix.strip("/")
    return f"{prefix}/" if prefix else ""


def partition_prefix(prefix: str, topic: str, topic_id: str, partition: int) -> str:
    validate_topic_name(topic)
    validate_topic_id(topic, topic_id)
    if partition < 0:
        raise ValueError(f"topic {topic}: invalid partition {partition}")
    return f"{normalize_prefix(prefix)}{topic}-{topic_id}/{partition}/"


def segment_key(
    prefix: str,
    topic: str,
    topic_id: str,
    partition: int,
    start_offset: int,
    segment_id: str,
    suffix: str,
) -> str:
    if not is_kafka_uuid(segment_id):
        raise ValueError(f"invalid segment id {segment_id!r}")
    base = partition_prefix(prefix, topic, topic_id, partition)
    return f"{base}{start_offset:020d}-{segment_id}.{suffix}"


def segment_object_key(prefix: str, segment: RemoteSegment, suffix: str) -> str:
    """The object of ``segment`` with ``suffix``: where every storage manager puts its files."""
    return segment_key(
        prefix,
        segment.topic,
        segment.topic_id,
        segment.partition,
        segment.start_offset,
        segment.segment_id,
        suffix,
    )
