"""Object keys of remote segments, in one of two key layouts.

* Aiven's tiered-storage plugin (the "chunked" and "plain" layouts):
  ``<prefix><topic>-<topicId>/<partition>/<offset>-<segmentId>.<suffix>``
* Kafka's own LocalTieredStorage (the "kafka-local" layout):
  ``<prefix>kafka-tiered-storage/<topic>-<partition>-<topicId>/<offset>-<segmentId>.<suffix>``.
  With a local-directory bucket and no prefix, the bucket is what a broker takes as
  ``rsm.config.dir``: each reads the other's segments.

Only the partition's directory differs; a segment's file names, ``<offset>`` its start offset
in 20 digits, are the same in both. Topic names are checked against Kafka's legal characters
first: a name is part of every key, and a name like ``../x`` must never reach a path or an
object key.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass

from tierflow.ids import is_kafka_uuid
from tierflow.rsm import RemoteSegment

_TOPIC_ID = re.compile(r"[A-Za-z0-9_-]{22}")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")  # fullmatch: "$" would allow a final "\n"
_PARTITION = re.compile(r"[0-9]+")
# ``<topic>-<topicId>``: Aiven's topic directory; the id is the last 22 characters.
_AIVEN_TOPIC_DIR = re.compile(r"(?P<topic>.+)-(?P<id>[A-Za-z0-9_-]{22})")
# ``<topic>-<partition>-<topicId>``: LocalTieredStorage's partition directory.
_LOCAL_PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>[0-9]+)-(?P<id>[A-Za-z0-9_-]{22})")
LOCAL_TIERED_STORAGE_DIR = "kafka-tiered-storage"  # LocalTieredStorage's ROOT_STORAGE_DIR_NAME


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


@dataclass(frozen=True)
class KeyPlace:
    """Where a key lies, read back from the key (relative to the storage prefix): the topic
    and partition its directories name, when they name one, and its partition directory."""

    topic: str | None = None
    topic_id: str | None = None
    partition: int | None = None
    partition_dir: str | None = None  # relative, ends with "/"


class KeyLayout(ABC):
    """Where a partition's objects lie in the bucket. Both layouts share the checks and the
    file names; a subclass says only how a partition's directory is named and read back."""

    name = ""

    @abstractmethod
    def directory(self, topic: str, topic_id: str, partition: int) -> str:
        """The partition's directory relative to the prefix, ending with '/' (checked input)."""

    @abstractmethod
    def topic_scope(self, topic: str, topic_id: str) -> str:
        """A relative listing prefix that holds every key of the topic (maybe others too)."""

    @abstractmethod
    def place(self, relative_key: str) -> KeyPlace:
        """What the key's directories name; an empty KeyPlace when they name nothing."""

    def partition_prefix(self, prefix: str, topic: str, topic_id: str, partition: int) -> str:
        validate_topic_name(topic)
        validate_topic_id(topic, topic_id)
        if partition < 0:
            raise ValueError(f"topic {topic}: invalid partition {partition}")
        return f"{normalize_prefix(prefix)}{self.directory(topic, topic_id, partition)}"

    def segment_key(
        self,
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
        base = self.partition_prefix(prefix, topic, topic_id, partition)
        return f"{base}{start_offset:020d}-{segment_id}.{suffix}"

    def segment_object_key(self, prefix: str, segment: RemoteSegment, suffix: str) -> str:
        """The object of ``segment`` with ``suffix``: where a storage manager puts its files."""
        return self.segment_key(
            prefix,
            segment.topic,
            segment.topic_id,
            segment.partition,
            segment.start_offset,
            segment.segment_id,
            suffix,
        )


class AivenKeys(KeyLayout):
    """``<topic>-<topicId>/<partition>/``: Aiven's plugin's layout."""

    name = "aiven"

    def directory(self, topic: str, topic_id: str, partition: int) -> str:
        return f"{topic}-{topic_id}/{partition}/"

    def topic_scope(self, topic: str, topic_id: str) -> str:
        return f"{topic}-{topic_id}/"

    def place(self, relative_key: str) -> KeyPlace:
        parts = relative_key.split("/")
        found = _AIVEN_TOPIC_DIR.fullmatch(parts[0])
        topic, topic_id = (found["topic"], found["id"]) if found else (None, None)
        if len(parts) < 3:
            return KeyPlace(topic, topic_id)
        partition = int(parts[1]) if _PARTITION.fullmatch(parts[1]) else None
        return KeyPlace(topic, topic_id, partition, f"{parts[0]}/{parts[1]}/")


class KafkaLocalKeys(KeyLayout):
    """``kafka-tiered-storage/<topic>-<partition>-<topicId>/``: LocalTieredStorage's layout
    (RemoteTopicPartitionDirectory), a broker's ``rsm.config.dir`` being the bucket."""

    name = "kafka-local"

    def directory(self, topic: str, topic_id: str, partition: int) -> str:
        return f"{LOCAL_TIERED_STORAGE_DIR}/{topic}-{partition}-{topic_id}/"

    def topic_scope(self, topic: str, topic_id: str) -> str:
        # Partitions are siblings here: "a-" also holds topic "a-1"'s directories.
        return f"{LOCAL_TIERED_STORAGE_DIR}/{topic}-"

    def place(self, relative_key: str) -> KeyPlace:
        parts = relative_key.split("/")
        if parts[0] != LOCAL_TIERED_STORAGE_DIR or len(parts) < 3:
            return KeyPlace()
        where = f"{parts[0]}/{parts[1]}/"
        found = _LOCAL_PARTITION_DIR.fullmatch(parts[1])
        if found is None:
            return KeyPlace(partition_dir=where)
        return KeyPlace(found["topic"], found["id"], int(found["partition"]), where)


AIVEN_KEYS = AivenKeys()
KAFKA_LOCAL_KEYS = KafkaLocalKeys()


def key_layout(storage_layout: str) -> KeyLayout:
    """The keys of a TIERFLOW_STORAGE_LAYOUT: LocalTieredStorage's for "kafka-local", else
    Aiven's ("chunked" and "plain")."""
    return KAFKA_LOCAL_KEYS if storage_layout == KAFKA_LOCAL_KEYS.name else AIVEN_KEYS


@dataclass(frozen=True)
class BucketKeys:
    """Where tiered objects lie in the bucket: under ``prefix`` (TIERFLOW_STORAGE_PREFIX), named
    by the key layout ``keys`` they were written under (TIERFLOW_STORAGE_LAYOUT's)."""

    prefix: str
    keys: KeyLayout = AIVEN_KEYS

    def partition_prefix(self, topic: str, topic_id: str, partition: int) -> str:
        return self.keys.partition_prefix(self.prefix, topic, topic_id, partition)


# Aiven's keys, the chunked and plain layouts' (``KeyLayout``'s methods for another layout): a
# partition's prefix, one segment file's key, and that of a segment's file with a suffix.
partition_prefix = AIVEN_KEYS.partition_prefix
segment_key = AIVEN_KEYS.segment_key
segment_object_key = AIVEN_KEYS.segment_object_key
