"""Where reconciliation looks in the bucket: registered partitions' prefixes and key shapes.

Keys follow keys.segment_key: ``<prefix><topic>-<id>/<partition>/<offset>-<segment id>.<suffix>``.
Reading them back is how an object is tied to the segment row that should name it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from tierflow.metadata.models import Partition, Topic
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.storage.keys import partition_prefix

# ``<20-digit start offset>-<22-character segment id>.<suffix>``: keys.segment_key's file name.
SEGMENT_FILE = re.compile(r"^(?P<stem>\d{20}-(?P<segment_id>[A-Za-z0-9_-]{22}))\.[^/]+$")


@dataclass
class PartitionScan:
    """What planning knows of one registered partition while it scans its prefix."""

    topic: Topic
    name: str  # the Kafka name (a retired row's keys still use it)
    row: Partition
    where: str  # its partition prefix

    @property
    def number(self) -> int:
        return self.row.partition


def partition_scans(store: MetadataStore, topic: Topic, prefix: str) -> Iterator[PartitionScan]:
    name = kafka_topic_name(topic.name)
    for row in store.partitions(topic.topic_id):
        where = partition_prefix(prefix, name, topic.topic_id, row.partition)
        yield PartitionScan(topic, name, row, where)


def topic_dir(prefix: str, topic: Topic) -> str:
    return f"{prefix}{kafka_topic_name(topic.name)}-{topic.topic_id}/"


def partition_dir(key: str, prefix: str) -> str | None:
    """``<prefix><topic>-<id>/<partition>/`` of a key, or None when it has no such shape."""
    parts = key[len(prefix) :].split("/")
    if len(parts) < 3:
        return None
    return f"{prefix}{parts[0]}/{parts[1]}/"


def stem(start_offset: int, segment_id: str) -> str:
    return f"{start_offset:020d}-{segment_id}"


def stem_in(key: str, where: str) -> str | None:
    """The ``<offset>-<segment id>`` a key under a partition prefix belongs to, if any."""
    found = SEGMENT_FILE.match(key[len(where) :]) if key.startswith(where) else None
    return found["stem"] if found else None


def segment_id_of(key: str) -> str | None:
    found = SEGMENT_FILE.match(key.rsplit("/", 1)[-1])
    return found["segment_id"] if found else None
