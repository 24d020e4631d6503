"""Topic registration: idempotent upserts, config events and the KIP-950 tiered state."""

from __future__ import annotations

import re

import pytest

from tests.metadata.metadata_support import NOW, TOPIC, TOPIC_ID, new_store
from tierflow.metadata import (
    InvalidConfigError,
    InvalidStateTransition,
    TieredState,
    TopicConflictError,
    UnknownTopicError,
    parse_kafka_configs,
)


def test_register_creates_the_topic_with_an_event(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    topic = store.register_topic(TOPIC, TOPIC_ID, actor="cli", now_ms=NOW, retention_ms=1000)
    assert (topic.name, topic.topic_id, topic.retention_ms) == (TOPIC, TOPIC_ID, 1000)
    assert (topic.tiered_state, topic.tiered_epoch, topic.updated_ms) == ("DISABLED", 0, NOW)
    assert store.topic(TOPIC) == store.topic_by_id(TOPIC_ID) == topic
    [event] = store.events(topic_id=TOPIC_ID)
    assert (event.entity, event.from_state, event.to_state, event.actor) == (
        "topic",
        None,
        "DISABLED",
        "cli",
    )
    assert event.details_dict["configs"]["retention.ms"] == "1000"


def test_register_again_unchanged_writes_nothing(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    store.register_topic(TOPIC, TOPIC_ID, actor="cli", now_ms=NOW, retention_ms=1000)
    store.register_topic(TOPIC, TOPIC_ID, actor="cli", now_ms=NOW + 1, retention_ms=1000)
    store.register_topic(TOPIC, TOPIC_ID, actor="cli", now_ms=NOW + 2)  # nothing to change
    assert len(store.events(topic_id=TOPIC_ID)) == 1
    assert store.topic(TOPIC).updated_ms == NOW


def test_config_change_is_an_event_naming_kafka_configs(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    store.register_topic(TOPIC, TOPIC_ID, actor="cli", now_ms=NOW)
    changes = parse_kafka_configs({"retention.ms": "1000", "local.retention.ms": "10"})
    topic = store.register_topic(TOPIC, TOPIC_ID, actor="alter", now_ms=NOW + 1, **changes)
    assert (topic.retention_ms, topic.local_retention_ms, topic.updated_ms) == (1000, 10, NOW + 1)
    event = store.events(topic_id=TOPIC_ID)[-1]
    assert (event.from_state, event.to_state, event.actor) == ("DISABLED", "DISABLED", "alter")
    assert event.details_dict["changed"] == {
        "retention.ms": [604_800_000, 1000],
        "local.retention.ms": [-2, 10],
    }


def test_invalid_change_leaves_the_topic_alone(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    store.register_topic(TOPIC, TOPIC_ID, actor="cli", now_ms=NOW, retention_bytes=100)
    with pytest.raises(
        InvalidConfigError, match=re.escape("local.retention.bytes=500 must be <= retention")
    ):
        store.register_topic(
            TOPIC,
            TOPIC_ID,
            actor="cli",
            now_ms=NOW + 1,
            remote_storage_enable=True,
            local_retention_bytes=500,
        )
    assert store.topic(TOPIC).remote_storage_enable is False
    assert len(store.events(topic_id=TOPIC_ID)) == 1


def test_unknown_python_config_name_is_rejected(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    with pytest.raises(InvalidConfigError, match="flush_ms: unknown topic config"):
        store.register_topic(TOPIC, TOPIC_ID, actor="cli", now_ms=NOW, flush_ms=1)
    assert store.topics() == []


def test_kip_950_enable_disable_cycle(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    topic = store.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=NOW)
    assert (topic.state, topic.tiered_epoch) == (TieredState.DISABLED, 0)

    topic = store.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=1, remote_storage_enable=True)
    assert (topic.state, topic.tiered_epoch) == (TieredState.ENABLED, 1)

    topic = store.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=2, remote_storage_enable=False)
    assert (topic.state, topic.tiered_epoch) == (TieredState.DISABLING, 2)

    with pytest.raises(
        InvalidConfigError, match=re.escape("remote.storage.enable=true: topic orders is")
    ):
        store.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=3, remote_storage_enable=True)

    assert store.finish_tiered_disable(TOPIC_ID, actor="lifecycle", now_ms=4) is True
    assert store.finish_tiered_disable(TOPIC_ID, actor="lifecycle", now_ms=5) is False
    topic = store.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=6, remote_storage_enable=True)
    assert (topic.state, topic.tiered_epoch) == (TieredState.ENABLED, 3)

    with pytest.raises(InvalidStateTransition, match="ENABLED -> DISABLED"):
        store.finish_tiered_disable(TOPIC_ID, actor="lifecycle", now_ms=7)

    transitions = [(e.from_state, e.to_state) for e in store.events(entity="topic")]
    assert transitions == [
        (None, "DISABLED"),
        ("DISABLED", "ENABLED"),
        ("ENABLED", "DISABLING"),
        ("DISABLING", "DISABLED"),
        ("DISABLED", "ENABLED"),
    ]


def test_registering_enabled_starts_enabled(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    topic = store.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=NOW, remote_storage_enable=True)
    assert (topic.tiered_state, topic.tiered_epoch) == ("ENABLED", 0)


def test_same_name_with_another_id_is_a_conflict(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    store.register_topic(TOPIC, TOPIC_ID, actor="a", now_ms=NOW)
    with pytest.raises(TopicConflictError, match=f"registered with id {TOPIC_ID}"):
        store.register_topic(TOPIC, "AAAAAAAAAAAAAAAAAAAAAg", actor="a", now_ms=NOW)
    with pytest.raises(TopicConflictError, match="already belongs to topic orders"):
        store.register_topic("payments", TOPIC_ID, actor="a", now_ms=NOW)


def test_unknown_topics_raise_keyerror_with_a_plain_message(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    with pytest.raises(KeyError) as caught:
        store.topic("missing")
    assert isinstance(caught.value, UnknownTopicError)
    assert str(caught.value) == "unknown topic 'missing'"
    with pytest.raises(UnknownTopicError):
        store.topic_by_id(TOPIC_ID)


def test_topics_are_listed_by_name(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    store.register_topic("zeta", "AAAAAAAAAAAAAAAAAAAAAg", actor="a", now_ms=NOW)
    store.register_topic("alpha", "AAAAAAAAAAAAAAAAAAAAAw", actor="a", now_ms=NOW)
    assert [t.name for t in store.topics()] == ["alpha", "zeta"]
