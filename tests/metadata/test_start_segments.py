"""``start_segments``: a partition's planned segments COPY_SEGMENT_STARTED in one transaction,
each with its event, fenced by the lease, with Kafka's checks on each: all or none."""

from __future__ import annotations

import pytest

from tests.metadata.metadata_support import NOW, PARTITION, TOPIC_ID, S, new_store
from tierflow.metadata import SegmentTransition
from tierflow.metadata.errors import LeaseLostError, UnknownSegmentError
from tierflow.metadata.segment_store import IN_QUERY_IDS, StartedSegment

MINUTE = 60_000


def planned(count: int, *, bad_at: int | None = None) -> list[StartedSegment]:
    """``count`` consecutive segments of 100 offsets; ``bad_at``'s size is negative."""
    return [
        StartedSegment(
            segment_id=f"segment-{i}",
            topic_id=TOPIC_ID,
            partition=PARTITION,
            start_offset=i * 100,
            end_offset=i * 100 + 99,
            max_timestamp_ms=NOW + i,
            segment_leader_epochs=[(0, i * 100)],
            segment_size_bytes=-1 if i == bad_at else 1000,
            txn_index_empty=True,
        )
        for i in range(count)
    ]


def test_every_segment_and_event_in_one_go(store_url: str) -> None:
    store = new_store(store_url)
    lease = store.take_lease(TOPIC_ID, PARTITION, "copy", now_ms=NOW, ttl_ms=MINUTE)
    store.start_segments(planned(3), actor="copy", now_ms=NOW, lease=lease)
    rows = store.segments(TOPIC_ID, PARTITION)
    assert [(r.segment_id, r.state, r.owner) for r in rows] == [
        (f"segment-{i}", S.COPY_SEGMENT_STARTED, "copy") for i in range(3)
    ]
    for row in rows:
        events = store.events(segment_id=row.segment_id)
        assert [(e.from_state, e.to_state) for e in events] == [(None, S.COPY_SEGMENT_STARTED)]


def test_a_lost_lease_writes_nothing(store_url: str) -> None:
    store = new_store(store_url)
    lease = store.take_lease(TOPIC_ID, PARTITION, "old", now_ms=NOW, ttl_ms=MINUTE)
    assert store.take_lease(TOPIC_ID, PARTITION, "new", now_ms=NOW + MINUTE, ttl_ms=MINUTE)
    with pytest.raises(LeaseLostError):
        store.start_segments(planned(3), actor="old", now_ms=NOW, lease=lease)
    assert store.segments(TOPIC_ID, PARTITION) == []


def test_one_bad_segment_starts_none(store_url: str) -> None:
    store = new_store(store_url)
    with pytest.raises(ValueError, match="segment-1"):
        store.start_segments(planned(3, bad_at=1), actor="copy", now_ms=NOW)
    assert store.segments(TOPIC_ID, PARTITION) == []


def test_states_of_many_segments_come_in_few_queries(store_url: str) -> None:
    """``segment_states``: what ``segment(id).state`` says of each, for more ids than one query
    binds; an id the store does not hold raises as ``segment()`` does, when it is looked up."""
    store = new_store(store_url)
    count = IN_QUERY_IDS + 7
    store.start_segments(planned(count), actor="copy", now_ms=NOW)
    store.transition_segment(
        SegmentTransition("segment-3", S.COPY_SEGMENT_FINISHED), actor="t", now_ms=NOW + 1
    )
    ids = [f"segment-{i}" for i in reversed(range(count))] + ["gone"]

    states = store.segment_states(ids)

    assert {i: states[i] for i in ids[:-1]} == {i: store.segment(i).state for i in ids[:-1]}
    assert states["segment-3"] == S.COPY_SEGMENT_FINISHED
    assert states[f"segment-{count - 1}"] == S.COPY_SEGMENT_STARTED
    with pytest.raises(UnknownSegmentError, match="'gone'"):
        states["gone"]
