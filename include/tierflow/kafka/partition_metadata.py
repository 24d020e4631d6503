"""``partition.metadata``: binds a partition directory to its topic id (Kafka 2.8+).

Remote object keys include the topic id, so a recreated topic with the same name never reads
the old topic's segments.
"""

from __future__ import annotations

from pathlib import Path

from tierflow.kafka._fs import write_atomically
from tierflow.kafka.checkpoint import parse_int, read_text_lines, split_fields
from tierflow.kafka.errors import CorruptCheckpointError
from tierflow.kafka.uuid import ZERO_UUID, from_kafka_uuid, to_kafka_uuid

PARTITION_METADATA = "partition.metadata"
VERSION = 0


def read_partition_metadata(path: str | Path) -> str:
    """The topic id. Like Kafka, only the values are checked, not the ``version:`` labels."""
    lines = read_text_lines(path)
    if not lines:
        raise CorruptCheckpointError(path, None, "empty file", line=1)
    try:
        version = parse_int(split_fields(lines[0], 2)[1], 32)
    except ValueError as exc:
        raise CorruptCheckpointError(path, None, f"malformed line {lines[0]!r}", line=1) from exc
    if version != VERSION:
        raise CorruptCheckpointError(path, None, f"unrecognized version {version}", line=1)
    if len(lines) < 2:
        raise CorruptCheckpointError(path, None, "missing topic_id line", line=2)
    try:
        # Kafka decodes the id and keeps the 16 bytes, so text whose last character carries
        # stray low bits ("...AB" for "...AA") is that id; its canonical text names objects.
        topic_id = to_kafka_uuid(from_kafka_uuid(split_fields(lines[1], 2)[1]))
    except ValueError as exc:
        raise CorruptCheckpointError(path, None, f"malformed line {lines[1]!r}", line=2) from exc
    if topic_id == ZERO_UUID:
        raise CorruptCheckpointError(path, None, "topic id is the reserved zero id", line=2)
    return topic_id


def partition_metadata_bytes(topic_id: str) -> bytes:
    """Byte-identical to Kafka's writer, which ends without a final newline."""
    from_kafka_uuid(topic_id)
    return f"version: {VERSION}\ntopic_id: {topic_id}".encode()


def write_partition_metadata(path: str | Path, topic_id: str) -> None:
    write_atomically(path, partition_metadata_bytes(topic_id))
