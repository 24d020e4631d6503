from __future__ import annotations

import pytest

from tierflow.ids import new_kafka_uuid
from tierflow.storage.keys import InvalidTopicNameError, segment_key, validate_topic_name


def test_segment_key_follows_the_aiven_layout():
    topic_id, segment_id = new_kafka_uuid(), new_kafka_uuid()
    key = segment_key("tiered/", "orders", topic_id, 3, 42, segment_id, "log")
    assert key == f"tiered/orders-{topic_id}/3/00000000000000000042-{segment_id}.log"


@pytest.mark.parametrize(
    "name",
    [
        "..",
        ".",
        "../etc",
        "/abs",
        "a/b",
        "nul\x00",
        pytest.param("", id="empty"),
        pytest.param("x" * 250, id="250-characters"),
    ],
)
def test_illegal_topic_names_are_rejected(name: str):
    with pytest.raises(InvalidTopicNameError, match="illegal topic name"):
        validate_topic_name(name)


def test_legal_topic_names_pass():
    for name in ("orders", "__consumer_offsets", "a.b-c_d", "x" * 249):
        assert validate_topic_name(name) == name


def test_ids_must_be_kafka_uuids():
    with pytest.raises(ValueError, match="topic id"):
        segment_key("", "orders", "not-a-uuid", 0, 0, new_kafka_uuid(), "log")
