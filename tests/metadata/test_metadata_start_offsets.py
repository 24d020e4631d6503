"""advance_log_start_offset / advance_local_log_start_offset and segment_summaries."""

from __future__ import annotations

import pytest

from tests.metadata.metadata_support import NOW, PARTITION, TOPIC_ID, S, add_segment, new_store
from tierflow.metadata import SegmentTransition, UnknownPartitionError


def offsets(store) -> tuple[int, int]:
    state = store.partition(TOPIC_ID, PARTITION)
    return state.log_start_offset, state.local_log_start_offset


def test_log_start_only_moves_forward_and_raises_the_local_start(store_url: str) -> None:
    store = new_store(store_url)
    assert store.advance_log_start_offset(TOPIC_ID, PARTITION, 100, actor="r", now_ms=NOW)
    assert offsets(store) == (100, 100)
    assert not store.advance_log_start_offset(TOPIC_ID, PARTITION, 100, actor="r", now_ms=NOW)
    assert not store.advance_log_start_offset(TOPIC_ID, PARTITION, 50, actor="r", now_ms=NOW)
    assert offsets(store) == (100, 100)
    events = [e for e in store.events(entity="partition") if e.actor == "r"]
    assert [e.details_dict for e in events] == [
        {"log_start_offset": [0, 100], "local_log_start_offset": [0, 100]}
    ]


def test_local_start_moves_alone_and_a_lower_log_start_leaves_it(store_url: str) -> None:
    store = new_store(store_url)
    assert store.advance_local_log_start_offset(TOPIC_ID, PARTITION, 500, actor="l", now_ms=NOW)
    assert offsets(store) == (0, 500)
    assert not store.advance_local_log_start_offset(TOPIC_ID, PARTITION, 400, actor="l", now_ms=NOW)
    assert store.advance_log_start_offset(TOPIC_ID, PARTITION, 200, actor="r", now_ms=NOW)
    assert offsets(store) == (200, 500)
    last = store.events(entity="partition")[-1]
    assert last.details_dict == {"log_start_offset": [0, 200]}


def test_unknown_partition(store_url: str) -> None:
    store = new_store(store_url)
    with pytest.raises(UnknownPartitionError):
        store.advance_log_start_offset(TOPIC_ID, 9, 1, actor="r", now_ms=NOW)


def test_segment_summaries_filter_by_state_and_sort_by_start(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "AAAAAAAAAAAAAAAAAAAAAA", 100, 199)
    add_segment(store, "BBBBBBBBBBBBBBBBBBBBBA", 0, 99)
    store.transition_segment(
        SegmentTransition("BBBBBBBBBBBBBBBBBBBBBA", S.COPY_SEGMENT_FINISHED), actor="a", now_ms=NOW
    )
    summaries = store.segment_summaries(
        TOPIC_ID, PARTITION, states=[S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED]
    )
    assert [(s.segment_id, s.start_offset, s.state) for s in summaries] == [
        ("BBBBBBBBBBBBBBBBBBBBBA", 0, S.COPY_SEGMENT_FINISHED),
        ("AAAAAAAAAAAAAAAAAAAAAA", 100, S.COPY_SEGMENT_STARTED),
    ]
    full = store.segment("AAAAAAAAAAAAAAAAAAAAAA")
    assert summaries[1].leader_epochs == full.leader_epochs
    assert summaries[1].segment_size_bytes == full.segment_size_bytes
    assert store.segment_summaries(TOPIC_ID, PARTITION, states=[S.DELETE_SEGMENT_STARTED]) == []


def test_decode_leader_epochs_matches_json() -> None:
    import json

    from tierflow.metadata.segment_store import decode_leader_epochs

    for pairs in ([[0, 0]], [[0, 5], [3, 90], [12, 1 << 40]], []):
        assert decode_leader_epochs(json.dumps(pairs)) == [tuple(p) for p in pairs]
    assert decode_leader_epochs("[[1,2],[3,4]]") == [(1, 2), (3, 4)]  # other spacing: json
