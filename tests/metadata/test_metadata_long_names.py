"""Kafka's longest names fit: PostgreSQL enforces VARCHAR lengths, which SQLite ignores.

A topic name may have 249 characters; a retired name adds a mark and the topic id, and lease
owners and actors are built from topic names and Airflow run ids (up to 250 characters).
"""

from __future__ import annotations

from tests.metadata.metadata_support import NOW, PARTITION, add_segment, new_store
from tierflow.metadata import RemoteLogSegmentState, SegmentTransition
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.tasks.segment_copy import copy_owner

LONGEST_TOPIC = "t" * 249  # Kafka's Topic.MAX_NAME_LENGTH
LONG_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
LONG_RUN_ACTOR = f"airflow:topic_disablement:{'r' * 250}"


def test_the_longest_topic_name_registers_copies_and_retires(store_url: str) -> None:
    store = new_store(store_url, with_partition=False)
    store.register_topic(
        LONGEST_TOPIC, LONG_TOPIC_ID, actor=LONG_RUN_ACTOR, now_ms=NOW, remote_storage_enable=True
    )
    store.ensure_partition(LONG_TOPIC_ID, PARTITION, log_start_offset=0, local_log_start_offset=0)
    owner = copy_owner({"topic": LONGEST_TOPIC, "partition": 2_147_483_647})

    assert store.acquire_lease(LONG_TOPIC_ID, PARTITION, owner, now_ms=NOW, ttl_ms=1000)
    add_segment(store, "seg", topic_id=LONG_TOPIC_ID, owner=owner, actor=owner)
    assert store.transition_segment(
        SegmentTransition("seg", RemoteLogSegmentState.COPY_SEGMENT_FINISHED),
        actor=owner,
        now_ms=NOW + 1,
    )
    store.mark_partition_delete(LONG_TOPIC_ID, PARTITION, actor=LONG_RUN_ACTOR, now_ms=NOW + 2)
    assert store.retire_topic_name(LONG_TOPIC_ID, actor=LONG_RUN_ACTOR, now_ms=NOW + 3)

    assert kafka_topic_name(store.topic_by_id(LONG_TOPIC_ID).name) == LONGEST_TOPIC
    assert store.partition(LONG_TOPIC_ID, PARTITION).lease_owner == owner
    assert store.segment("seg").owner == owner
    assert {e.actor for e in store.events(topic_id=LONG_TOPIC_ID)} == {
        LONG_RUN_ACTOR,
        "tierflow",
        owner,
    }
