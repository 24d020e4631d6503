"""Mirroring the brokers' records into the store (``lifecycle.remote_log_metadata.follow``).

The records are built as Kafka's serde reads them (that serde is held to Kafka's own in
tests/kafka). A followed topic's segments arrive as the broker's; the same records again, in
order, change nothing; an older state after a newer one is ignored; a topic tierflow does not
follow and a segment tierflow wrote are left alone.
"""

from __future__ import annotations

from tests.metadata.metadata_support import NOW, PARTITION, TOPIC, TOPIC_ID, add_segment, new_store
from tierflow.kafka.remote_log_metadata.records import (
    PartitionDelete,
    SegmentMetadata,
    SegmentUpdate,
    TopicIdPartition,
)
from tierflow.lifecycle.remote_log_metadata.follow import follow_topic, mirror
from tierflow.metadata.states import RemoteLogSegmentState as S

WHERE = TopicIdPartition(TOPIC, TOPIC_ID, PARTITION)
BROKERS = "CAAAAAAAAAAAAAAAAAAAAA"
OURS = "AAAAAAAAAAAAAAAAAAAAAA"


def _records() -> list:
    started = SegmentMetadata(WHERE, BROKERS, 100, 199, 3, NOW, NOW + 1, ((0, 100),), 4096, 0)
    finished = SegmentUpdate(WHERE, BROKERS, 3, NOW + 2, S.COPY_SEGMENT_FINISHED.id, b"m")
    return [started, finished]


def test_a_followed_topics_records_become_the_brokers_segments_once(store_url: str) -> None:
    store = new_store(store_url)
    follow_topic(store, TOPIC, actor="t", now_ms=NOW)
    followed = {TOPIC_ID: store.topic(TOPIC)}
    assert [mirror(store, followed, r) for r in _records()] == ["mirrored", "mirrored"]
    assert [mirror(store, followed, r) for r in _records()] == ["known", "known"]
    row = store.segment(BROKERS)
    assert (row.writer, row.state, row.owner) == ("broker", S.COPY_SEGMENT_FINISHED, "broker:3")
    assert (row.custom_metadata, row.event_timestamp_ms) == (b"m", NOW + 2)
    assert store.highest_remote_offset(TOPIC_ID, PARTITION) == 199
    deleting = SegmentUpdate(WHERE, BROKERS, 3, NOW + 3, S.DELETE_SEGMENT_STARTED.id)
    assert mirror(store, followed, deleting) == "mirrored"
    assert mirror(store, followed, _records()[1]) == "known"  # older than what it has
    marked = PartitionDelete(WHERE, 3, NOW + 4, 0)
    assert mirror(store, followed, marked) == "mirrored"
    assert mirror(store, followed, marked) == "known"


def test_other_topics_and_tierflows_own_segments_are_left_alone(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, OURS)
    assert mirror(store, {}, _records()[0]) == "not followed"
    assert store.find_segment(BROKERS) is None
    store.set_copier(TOPIC_ID, "broker", actor="t", now_ms=NOW)
    followed = {TOPIC_ID: store.topic(TOPIC)}
    ours = SegmentUpdate(WHERE, OURS, 3, NOW + 2, S.COPY_SEGMENT_FINISHED.id)
    assert mirror(store, followed, ours) == "known"
    assert store.segment(OURS).state == S.COPY_SEGMENT_STARTED
