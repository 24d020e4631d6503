"""Which partition of ``__remote_log_metadata`` holds a user partition's records.

Kafka's ``RemoteLogMetadataTopicPartitioner``: murmur2 (kafka-python's, the Java client's) over
the four big-endian bytes of Java's ``Objects.hash(topicId.lsb, topicId.msb, partition)``, made
positive, modulo the metadata topic's partition count. A broker reads a user partition's
records from that metadata partition only, so a record published anywhere else is never seen.
"""

from __future__ import annotations

from kafka.partitioner.default import murmur2

from tierflow.kafka.uuid import from_kafka_uuid

DEFAULT_PARTITIONS = 50  # remote.log.metadata.topic.num.partitions
_INT32 = 1 << 32


def metadata_partition(topic_id: str, partition: int, partitions: int = DEFAULT_PARTITIONS) -> int:
    """The metadata partition of ``topic_id`` (Kafka's 22-character form) and ``partition``."""
    if partitions < 1:
        raise ValueError(f"remote.log.metadata.topic.num.partitions must be positive: {partitions}")
    bits = from_kafka_uuid(topic_id).int
    msb, lsb = bits >> 64, bits & (1 << 64) - 1  # as Java's longs hold them, bit for bit
    hashed = 1
    for element in (_long_hash(lsb), _long_hash(msb), partition):
        hashed = (31 * hashed + element) % _INT32
    return (murmur2(hashed.to_bytes(4, "big")) & 0x7FFFFFFF) % partitions


def _long_hash(value: int) -> int:
    """Java's ``Long.hashCode``: the two halves XORed, as an unsigned 32-bit value."""
    return (value ^ (value >> 32)) % _INT32
