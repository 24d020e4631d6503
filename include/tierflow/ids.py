"""Ids tierflow hands out: Kafka's Uuid text form, whose codec lives with Kafka's formats.

Kept as the library-wide name for the ids; the encoding itself is ``tierflow.kafka.uuid``.
Ids of runs (Airflow's, the CLI's) become file and directory names through ``safe_name``.
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
    "safe_name",
    "to_kafka_uuid",
]


def safe_name(text: str) -> str:
    """A run key or partition label as a file name (an Airflow run id has colons and pluses)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
