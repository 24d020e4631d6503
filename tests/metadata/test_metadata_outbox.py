"""The store's side of ``__remote_log_metadata``: what goes in the outbox, and a topic's copier.

On SQLite and PostgreSQL. The outbox takes the transitions of segments tierflow wrote (also
once their topic is handed over: the hand-over publishes them then), never those of segments a
broker wrote; entries are made once, in history order, and marked with their offsets.
"""

from __future__ import annotations

import pytest

from tests.metadata.metadata_support import NOW, TOPIC, TOPIC_ID, add_segment, new_store
from tierflow.kafka.batch_scan import ScannedFacts
from tierflow.kafka.remote_log_metadata.records import SegmentMetadata
from tierflow.kafka.remote_log_metadata.serde import deserialize
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic
from tierflow.lifecycle.compaction.swap import compactable
from tierflow.lifecycle.copy.prepare import _not_copyable
from tierflow.lifecycle.remote_log_metadata.handover import (
    HandoverRefused,
    hand_over,
    plan_handover,
)
from tierflow.lifecycle.remote_log_metadata.publish import fill_outbox
from tierflow.lifecycle.retention.remote import remote_retention_applies
from tierflow.metadata import SegmentTransition
from tierflow.metadata.errors import MetadataError
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.remote_log_metadata_store import OUTBOX_POSITION
from tierflow.metadata.states import RemoteLogSegmentState as S

SEGMENT = "AAAAAAAAAAAAAAAAAAAAAA"
OTHER = "BAAAAAAAAAAAAAAAAAAAAA"
HELD = "CAAAAAAAAAAAAAAAAAAAAA"  # not all zero bits: kafka-python reads those as no id


def test_each_transition_of_tierflows_segments_is_one_entry_in_history_order(
    store_url: str,
) -> None:
    store = new_store(store_url)
    add_segment(store, SEGMENT)
    store.transition_segment(
        SegmentTransition(SEGMENT, S.COPY_SEGMENT_FINISHED), actor="t", now_ms=NOW + 1
    )
    assert fill_outbox(store, partitions=50) == 2
    assert fill_outbox(store, partitions=50) == 0  # made once
    entries = store.unpublished(10)
    assert [e.event_id for e in entries] == sorted(e.event_id for e in entries)
    store.mark_published([(entries[0].event_id, 7)])
    assert store.published_through(entries[0].metadata_partition) == 7
    assert store.outbox_depth() == 1


def test_a_started_record_waits_for_the_facts_its_copy_learns_from_the_batches(
    store_url: str,
) -> None:
    """Kafka's STARTED record carries the largest timestamp and the leader epochs, which the
    copy learns as it uploads the batches: it goes out once the copy has ended, with them, and
    the outbox's position waits behind it meanwhile."""
    store = new_store(store_url)
    add_segment(store, HELD, max_timestamp_ms=-1, segment_leader_epochs=[(0, 0)])
    started_at = store.last_event_id()
    add_segment(store, OTHER, start=100, end=199)
    store.transition_segment(
        SegmentTransition(OTHER, S.COPY_SEGMENT_FINISHED), actor="t", now_ms=NOW + 1
    )
    assert fill_outbox(store, partitions=50) == 2  # the other segment's, not this STARTED
    assert (store.position(OUTBOX_POSITION) or 0) < started_at
    scanned = ScannedFacts(NOW - 7, [(0, 0), (3, 40)])
    store.transition_segment(
        SegmentTransition(HELD, S.COPY_SEGMENT_FINISHED, scanned=scanned), actor="t", now_ms=NOW + 1
    )
    assert fill_outbox(store, partitions=50) == 2
    records = [deserialize(entry.payload) for entry in store.unpublished(10)]
    (started,) = [r for r in records if isinstance(r, SegmentMetadata) and r.segment_id == HELD]
    assert (started.max_timestamp_ms, started.leader_epochs) == (NOW - 7, ((0, 0), (3, 40)))


def test_segments_a_broker_wrote_never_go_in_the_outbox(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, OTHER)
    with store.engine.begin() as connection:
        connection.execute(
            RemoteLogSegment.__table__.update()  # type: ignore[attr-defined]
            .where(RemoteLogSegment.__table__.c.segment_id == OTHER)  # type: ignore[attr-defined]
            .values(writer="broker")
        )
    assert fill_outbox(store, partitions=50) == 0


def test_the_copier_changes_once_with_an_event_and_gates_the_lifecycle(store_url: str) -> None:
    store = new_store(store_url)
    topic = store.topic_by_id(TOPIC_ID)
    assert topic.copied_by_tierflow and _not_copyable(topic) is None
    assert remote_retention_applies(topic)
    assert store.set_copier(TOPIC_ID, "broker", actor="t", now_ms=NOW)
    assert not store.set_copier(TOPIC_ID, "broker", actor="t", now_ms=NOW)
    handed = store.topic_by_id(TOPIC_ID)
    assert [e.to_state for e in store.events(topic_id=TOPIC_ID, entity="topic")][-1] == (
        "COPIER_BROKER"
    )
    assert _not_copyable(handed) == "the brokers copy it (handed over, or followed)"
    assert not remote_retention_applies(handed)
    assert compactable(handed) is not None
    with pytest.raises(MetadataError, match="copier must be one of"):
        store.set_copier(TOPIC_ID, "nobody", actor="t", now_ms=NOW)


def test_tierflows_segments_are_published_after_the_hand_over_too(store_url: str) -> None:
    """The hand-over marks the topic first, then publishes what waits: it must still go."""
    store = new_store(store_url)
    add_segment(store, SEGMENT)
    store.transition_segment(
        SegmentTransition(SEGMENT, S.COPY_SEGMENT_FINISHED), actor="t", now_ms=NOW + 1
    )
    store.set_copier(TOPIC_ID, "broker", actor="t", now_ms=NOW)
    assert fill_outbox(store, partitions=50) == 2


def test_a_hand_over_is_refused_while_a_copy_is_in_flight(store_url: str) -> None:
    """Refused before anything changes: the topic stays tierflow's, nothing is published."""
    store = new_store(store_url)
    add_segment(store, SEGMENT)  # COPY_SEGMENT_STARTED: a copy at work, or killed
    plan = plan_handover(store, TOPIC, {"local.retention.ms": "1000"})
    assert plan.refusal is not None and SEGMENT in plan.refusal
    assert plan.configs == {"remote.storage.enable": "true", "local.retention.ms": "1000"}
    unreachable = MetadataTopic("127.0.0.1:1", timeout_s=1)
    with pytest.raises(HandoverRefused, match="still in flight"):
        hand_over(store, unreachable, plan, actor="t", now_ms=NOW)
    assert store.topic(TOPIC).copied_by_tierflow and store.outbox_depth() == 0
    store.transition_segment(
        SegmentTransition(SEGMENT, S.COPY_SEGMENT_FINISHED), actor="t", now_ms=NOW + 1
    )
    ready = plan_handover(store, TOPIC)
    assert ready.refusal is None and ready.copied == {0: (1, 99)}
    assert ready.waiting == 2  # STARTED and FINISHED, not in the outbox yet
    fill_outbox(store, partitions=50)
    assert store.waiting_of(TOPIC_ID) == 2  # in it, not published
    store.mark_published([(e.event_id, n) for n, e in enumerate(store.unpublished(10))])
    assert store.waiting_of(TOPIC_ID) == 0
