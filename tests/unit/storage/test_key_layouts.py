"""The two key layouts: Aiven's, and Kafka's LocalTieredStorage's ("kafka-local").

Both check the same input (topic names, topic ids, segment ids, partitions) and name a
segment's files alike; only the partition's directory differs. Reading a key back names the
topic and partition it lies in, which is how reconcile and removal find a partition's objects.
"""

from __future__ import annotations

import re
import uuid

import pytest

from tierflow.ids import to_kafka_uuid
from tierflow.rsm import RemoteSegment
from tierflow.storage.keys import (
    AIVEN_KEYS,
    KAFKA_LOCAL_KEYS,
    InvalidTopicIdError,
    InvalidTopicNameError,
    KeyLayout,
    KeyPlace,
    key_layout,
)

LAYOUTS = [AIVEN_KEYS, KAFKA_LOCAL_KEYS]
# Fixed ids (parameter ids must not change between pytest-xdist workers).
TOPIC_ID = to_kafka_uuid(uuid.UUID("2d682b32-656b-4f46-bfff-b6b849ab2e3c"))
SEGMENT_ID = to_kafka_uuid(uuid.UUID("6c2a975f-4fbe-4bee-94f1-7c5430825b94"))
# LocalTieredStorage's own patterns (RemoteTopicPartitionDirectory, RemoteLogSegmentFileset).
KAFKA_PARTITION_DIR = re.compile(r"([a-zA-Z0-9._-]+)-(\d+)-([a-zA-Z0-9_-]{22})")
KAFKA_FILE_NAME = re.compile(r"(\d+-)([a-zA-Z0-9_-]{22})(\.[a-z_]+)")


def test_kafka_local_keys_are_local_tiered_storages_paths() -> None:
    segment = RemoteSegment("orders", TOPIC_ID, 3, SEGMENT_ID, 42, 99)
    key = KAFKA_LOCAL_KEYS.segment_object_key("", segment, "leader_epoch_checkpoint")
    assert key == (
        f"kafka-tiered-storage/orders-3-{TOPIC_ID}/"
        f"00000000000000000042-{SEGMENT_ID}.leader_epoch_checkpoint"
    )
    _root, directory, name = key.split("/")
    assert KAFKA_PARTITION_DIR.fullmatch(directory) and KAFKA_FILE_NAME.fullmatch(name)
    with_prefix = KAFKA_LOCAL_KEYS.segment_object_key("/tiered//", segment, "log")
    assert with_prefix == f"tiered/{key.rsplit('.', 1)[0]}.log"


def test_only_the_partition_directory_differs() -> None:
    aiven = AIVEN_KEYS.segment_key("p/", "orders", TOPIC_ID, 3, 42, SEGMENT_ID, "log")
    local = KAFKA_LOCAL_KEYS.segment_key("p/", "orders", TOPIC_ID, 3, 42, SEGMENT_ID, "log")
    assert aiven == f"p/orders-{TOPIC_ID}/3/00000000000000000042-{SEGMENT_ID}.log"
    assert aiven.rsplit("/", 1)[1] == local.rsplit("/", 1)[1]


@pytest.mark.parametrize("keys", LAYOUTS, ids=lambda k: k.name)
def test_both_layouts_check_their_input(keys: KeyLayout) -> None:
    with pytest.raises(InvalidTopicNameError):
        keys.segment_key("", "../etc", TOPIC_ID, 0, 0, SEGMENT_ID, "log")
    with pytest.raises(InvalidTopicIdError):
        keys.segment_key("", "orders", f"{TOPIC_ID}\n", 0, 0, SEGMENT_ID, "log")
    with pytest.raises(ValueError, match="segment id"):
        keys.segment_key("", "orders", TOPIC_ID, 0, 0, "not-a-uuid", "log")
    with pytest.raises(ValueError, match="partition"):
        keys.partition_prefix("", "orders", TOPIC_ID, -1)


@pytest.mark.parametrize("keys", LAYOUTS, ids=lambda k: k.name)
@pytest.mark.parametrize("topic", ["orders", "a-1", "x.y_z-0", "7"])
def test_a_key_names_its_topic_and_partition(keys: KeyLayout, topic: str) -> None:
    where = keys.partition_prefix("", topic, TOPIC_ID, 12)
    place = keys.place(f"{where}00000000000000000000-{SEGMENT_ID}.log")
    assert place == KeyPlace(topic, TOPIC_ID, 12, where)
    assert where.startswith(keys.topic_scope(topic, TOPIC_ID))


@pytest.mark.parametrize(
    ("key", "place"),
    [
        pytest.param("kafka-tiered-storage/stray.bin", KeyPlace(), id="file-beside-the-partitions"),
        pytest.param("elsewhere/orders-0-x/y.log", KeyPlace(), id="outside-the-root"),
        pytest.param(
            "kafka-tiered-storage/junk/y.log",
            KeyPlace(partition_dir="kafka-tiered-storage/junk/"),
            id="directory-not-named-as-a-partition",
        ),
        pytest.param(
            f"kafka-tiered-storage/a-1-0-{TOPIC_ID}/deeper/y.log",
            KeyPlace("a-1", TOPIC_ID, 0, f"kafka-tiered-storage/a-1-0-{TOPIC_ID}/"),
            id="nested-below-a-partition",
        ),
    ],
)
def test_kafka_local_keys_outside_a_partition_name_none(key: str, place: KeyPlace) -> None:
    assert KAFKA_LOCAL_KEYS.place(key) == place


def test_aiven_keys_read_back_as_before() -> None:
    assert AIVEN_KEYS.place("strays/left-behind.bin") == KeyPlace()
    assert AIVEN_KEYS.place(f"orders-{TOPIC_ID}/x.log") == KeyPlace("orders", TOPIC_ID)
    assert AIVEN_KEYS.place(f"orders-{TOPIC_ID}/p/x.log") == KeyPlace(
        "orders", TOPIC_ID, None, f"orders-{TOPIC_ID}/p/"
    )


def test_the_setting_picks_the_keys() -> None:
    assert key_layout("kafka-local") is KAFKA_LOCAL_KEYS
    assert key_layout("plain") is AIVEN_KEYS and key_layout("chunked") is AIVEN_KEYS
