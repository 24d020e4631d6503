"""Retiring a deleted topic's name so Kafka can recreate it under a new id."""

from __future__ import annotations

import pytest

from tests.metadata.metadata_support import NOW, PARTITION, TOPIC, TOPIC_ID, new_store
from tierflow.ids import new_kafka_uuid
from tierflow.metadata import MetadataError, TopicConflictError
from tierflow.metadata.topic_registry import kafka_topic_name, retired_topic_name


def test_only_a_topic_marked_for_delete_can_be_retired(store_url: str) -> None:
    store = new_store(store_url)
    with pytest.raises(MetadataError, match=r"not marked for delete"):
        store.retire_topic_name(TOPIC_ID, actor="test", now_ms=NOW)
    assert store.topic(TOPIC).topic_id == TOPIC_ID


def test_retired_name_frees_the_name_for_a_new_id(store_url: str) -> None:
    store = new_store(store_url)
    new_id = new_kafka_uuid()
    with pytest.raises(TopicConflictError):
        store.register_topic(TOPIC, new_id, actor="test", now_ms=NOW)
    store.mark_partition_delete(TOPIC_ID, PARTITION, actor="test", now_ms=NOW)

    assert store.retire_topic_name(TOPIC_ID, actor="test", now_ms=NOW + 1)
    assert not store.retire_topic_name(TOPIC_ID, actor="test", now_ms=NOW + 2)

    old = store.topic_by_id(TOPIC_ID)
    assert old.name == retired_topic_name(TOPIC, TOPIC_ID)
    assert kafka_topic_name(old.name) == TOPIC
    assert kafka_topic_name(TOPIC) == TOPIC
    store.register_topic(TOPIC, new_id, actor="test", now_ms=NOW + 3)
    assert store.topic(TOPIC).topic_id == new_id
    events = store.events(topic_id=TOPIC_ID)
    assert events[-1].details_dict == {"name": old.name, "retired_name": TOPIC}
