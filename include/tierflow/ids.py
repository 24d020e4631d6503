"""Ids tierflow hands out: Kafka's Uuid text form, whose codec lives with Kafka's formats.

Kept as the library-wide name for the ids; the encoding itself is ``tierflow.kafka.uuid``.
"""

from __future__ import annotations

from tierflow.kafka.uuid import (
    METADATA_TOPIC_ID,
    ZERO_UUID,
    from_kafka_uuid,
    is_kafka_uuid,
    new_kafka_uuid,
    to_kafka_uuid,
)

__all__ = [
    "METADATA_TOPIC_ID",
    "ZERO_UUID",
    "from_kafka_uuid",
    "is_kafka_uuid",
    "new_kafka_uuid",
    "to_kafka_uuid",
]
