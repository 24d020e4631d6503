"""Where reconciliation looks in the bucket: registered partitions' prefixes and key shapes.

Keys follow the configured key layout (storage/keys.py): Aiven's
``<prefix><topic>-<id>/<partition>/<offset>-<segment id>.<suffix>``, or LocalTieredStorage's
``<prefix>kafka-tiered-storage/<topic>-<partition>-<id>/<offset>-<segment id>.<suffix>``. The
file name is the same in both. Reading keys back is how an object is tied to the segment row
that should name it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypedDict

from tierflow.metadata.models import Partition, Topic
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.storage.keys import KeyLayout, KeyPlace

# ``<20-digit start offset>-<22-character segment id>.<suffix>``: keys.segment_key's file name.
SEGMENT_FILE = re.compile(r"^(?P<stem>\d{20}-(?P<segment_id>[A-Za-z0-9_-]{22}))\.[^/]+$")


class FindingNames(TypedDict):
    """A partition as a finding (and an orphan's place) names it."""

    topic: str
    topic_id: str
    partition: int


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

    @property
    def finding_names(self) -> FindingNames:
        """How every finding about this partition names it: Kafka name, topic id, number."""
        return {"topic": self.name, "topic_id": self.topic.topic_id, "partition": self.number}


def partition_scans(
    store: MetadataStore, topic: Topic, prefix: str, keys: KeyLayout
) -> Iterator[PartitionScan]:
    name = kafka_topic_name(topic.name)
    for row in store.partitions(topic.topic_id):
        where = keys.partition_prefix(prefix, name, topic.topic_id, row.partition)
        yield PartitionScan(topic, name, row, where)


TopicKey = tuple[str, str]  # (Kafka name, topic id): how a key's directories name its topic


def topic_key(topic: Topic) -> TopicKey:
    return kafka_topic_name(topic.name), topic.topic_id


@dataclass(frozen=True)
class TopicScope:
    """A listing prefix holding a topic's keys, and the topic they must name (None: any key
    under it). LocalTieredStorage's ``a-`` also lists topic ``a-1``'s directories."""

    where: str
    topic: TopicKey | None = None

    def holds(self, place: KeyPlace) -> bool:
        return self.topic is None or named_topic(place) == self.topic


def named_topic(place: KeyPlace) -> TopicKey | None:
    """The topic a key's directories name, if they name one."""
    if place.topic is None or place.topic_id is None:
        return None
    return place.topic, place.topic_id


def topic_scope(prefix: str, topic: Topic, keys: KeyLayout) -> TopicScope:
    name, topic_id = topic_key(topic)
    return TopicScope(f"{prefix}{keys.topic_scope(name, topic_id)}", (name, topic_id))


def key_place(key: str, prefix: str, keys: KeyLayout) -> KeyPlace:
    """What the key's directories under ``prefix`` name (its partition directory with the
    prefix), whatever the key layout."""
    place = keys.place(key[len(prefix) :])
    if place.partition_dir is None:
        return place
    return KeyPlace(place.topic, place.topic_id, place.partition, prefix + place.partition_dir)


def stem(start_offset: int, segment_id: str) -> str:
    return f"{start_offset:020d}-{segment_id}"


def stem_in(key: str, where: str) -> str | None:
    """The ``<offset>-<segment id>`` a key under a partition prefix belongs to, if any."""
    found = SEGMENT_FILE.match(key[len(where) :]) if key.startswith(where) else None
    return found["stem"] if found else None


def segment_id_of(key: str) -> str | None:
    found = SEGMENT_FILE.match(key.rsplit("/", 1)[-1])
    return found["segment_id"] if found else None
