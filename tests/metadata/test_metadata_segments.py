"""The segment state machine as the store enforces it: every pair, events, FINISHED effects."""

from __future__ import annotations

import itertools
import json

import pytest

from tests.metadata.metadata_support import (
    NOW,
    PARTITION,
    TOPIC_ID,
    add_segment,
    new_store,
    segment_in_state,
)
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.metadata import (
    InvalidStateTransition,
    RemoteLogSegmentState,
    SegmentObject,
    SegmentTransition,
    UnknownPartitionError,
    UnknownSegmentError,
)

S = RemoteLogSegmentState

# (src, dst) pairs the machine allows, self-transitions excluded (those are no-ops).
MOVES = {
    (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED),
    (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED),
}


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(S, S)))
def test_every_transition_from_every_state(store_url: str, src: S, dst: S) -> None:
    store = new_store(store_url)
    segment_in_state(store, "seg", src)
    before = store.events(segment_id="seg")

    if src == dst:
        assert (
            store.transition_segment(SegmentTransition("seg", dst), actor="t", now_ms=NOW + 100)
            is False
        )
        assert store.events(segment_id="seg") == before
    elif (src, dst) in MOVES:
        assert (
            store.transition_segment(SegmentTransition("seg", dst), actor="t", now_ms=NOW + 100)
            is True
        )
        events = store.events(segment_id="seg")
        assert len(events) == len(before) + 1
        last = events[-1]
        assert (last.from_state, last.to_state, last.actor) == (src, dst, "t")
        assert last.event_timestamp_ms == NOW + 100
    else:
        with pytest.raises(InvalidStateTransition) as caught:
            store.transition_segment(SegmentTransition("seg", dst), actor="t", now_ms=NOW + 100)
        assert caught.value.src == src and caught.value.dst == dst
        assert f"seg: invalid state transition {src} -> {dst}" in str(caught.value)
        assert store.events(segment_id="seg") == before

    expected = dst if src == dst or (src, dst) in MOVES else src
    assert store.segment("seg").state == expected


def test_delete_finished_to_copy_started_raises(store_url: str) -> None:
    store = new_store(store_url)
    segment_in_state(store, "seg", S.DELETE_SEGMENT_FINISHED)
    with pytest.raises(InvalidStateTransition, match="DELETE_SEGMENT_FINISHED -> COPY_SEGMENT_"):
        store.transition_segment(
            SegmentTransition("seg", S.COPY_SEGMENT_STARTED), actor="t", now_ms=NOW
        )
    with pytest.raises(InvalidStateTransition, match="DELETE_SEGMENT_FINISHED -> COPY_SEGMENT_"):
        add_segment(store, "seg")  # re-adding is the same null/self -> COPY_STARTED step
    assert store.segment("seg").state == S.DELETE_SEGMENT_FINISHED


def test_add_is_null_to_copy_started_with_an_event(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(
        store,
        "seg",
        start=100,
        end=199,
        segment_leader_epochs=[EpochEntry(3, 100), EpochEntry(5, 150)],
        owner="task-7",
        custom_metadata=b"\x01\x02",
    )
    row = store.segment("seg")
    assert row.state == S.COPY_SEGMENT_STARTED
    assert row.leader_epoch == 5
    assert row.leader_epochs == [(3, 100), (5, 150)]
    assert json.loads(row.segment_leader_epochs) == [[3, 100], [5, 150]]
    assert (row.owner, row.custom_metadata, row.created_ms) == ("task-7", b"\x01\x02", NOW)
    assert row.tiered_epoch == store.topic_by_id(TOPIC_ID).tiered_epoch
    [event] = store.events(segment_id="seg")
    assert (event.entity, event.from_state, event.to_state) == ("segment", None, row.state)
    assert event.details_dict == {
        "start_offset": 100,
        "end_offset": 199,
        "segment_size_bytes": 1024,
    }


def test_repeated_add_is_a_no_op(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "seg", now_ms=NOW)
    add_segment(store, "seg", now_ms=NOW + 5)
    assert store.segment("seg").created_ms == NOW
    assert len(store.events(segment_id="seg")) == 1


def test_add_with_same_id_but_other_offsets_is_rejected(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "seg", start=0, end=99)
    with pytest.raises(ValueError, match=r"seg already exists .*\[0, 99\]"):
        add_segment(store, "seg", start=100, end=199)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        pytest.param({"segment_leader_epochs": []}, "must not be empty", id="no-leader-epochs"),
        pytest.param(
            {"segment_leader_epochs": [(2, 0), (1, 50)]},
            "not ascending at epoch 1",
            id="leader-epochs-not-ascending",
        ),
        pytest.param(
            {"start_offset": 10, "end_offset": 9},
            r"start_offset \(10\) <= end_offset \(9\)",
            id="start-after-end",
        ),
        pytest.param(
            {"leader_epoch": 4}, "leader_epoch 4 is not the last", id="leader-epoch-not-the-last"
        ),
    ],
)
def test_add_validates_the_segment(store_url: str, overrides: dict, message: str) -> None:
    store = new_store(store_url)
    with pytest.raises(ValueError, match=message):
        add_segment(store, "seg", **overrides)
    assert store.events(segment_id="seg") == []


def test_add_to_unknown_partition_raises(store_url: str) -> None:
    store = new_store(store_url)
    with pytest.raises(UnknownPartitionError, match=f"{TOPIC_ID}-9"):
        add_segment(store, "seg", partition=9)


def test_transition_of_unknown_segment_raises(store_url: str) -> None:
    store = new_store(store_url)
    with pytest.raises(UnknownSegmentError, match="nope"):
        store.transition_segment(
            SegmentTransition("nope", S.COPY_SEGMENT_FINISHED), actor="t", now_ms=NOW
        )


def test_history_shows_every_transition_in_order(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "a", 0, 99)
    add_segment(store, "b", 100, 199, now_ms=NOW + 1)
    steps = [
        ("a", S.COPY_SEGMENT_FINISHED),
        ("b", S.DELETE_SEGMENT_STARTED),  # an abandoned copy cleaned up
        ("a", S.DELETE_SEGMENT_STARTED),
        ("b", S.DELETE_SEGMENT_FINISHED),
        ("a", S.DELETE_SEGMENT_FINISHED),
    ]
    for offset, (segment_id, dst) in enumerate(steps, start=10):
        moved = SegmentTransition(segment_id, dst)
        store.transition_segment(moved, actor=f"step-{offset}", now_ms=NOW + offset)
        store.transition_segment(moved, actor="retry", now_ms=NOW + offset)  # no-op

    history = [
        (e.entity, e.segment_id, e.from_state, e.to_state, e.actor)
        for e in store.events(topic_id=TOPIC_ID)
    ]
    assert history == [
        ("topic", None, None, "ENABLED", "test"),
        ("partition", None, None, "REGISTERED", "tierflow"),
        ("segment", "a", None, "COPY_SEGMENT_STARTED", "copier"),
        ("segment", "b", None, "COPY_SEGMENT_STARTED", "copier"),
        ("segment", "a", "COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "step-10"),
        ("segment", "b", "COPY_SEGMENT_STARTED", "DELETE_SEGMENT_STARTED", "step-11"),
        ("segment", "a", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "step-12"),
        ("segment", "b", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED", "step-13"),
        ("segment", "a", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED", "step-14"),
    ]
    ids = [e.id for e in store.events()]
    assert ids == sorted(ids)
    assert [e.to_state for e in store.events(segment_id="b")] == [
        "COPY_SEGMENT_STARTED",
        "DELETE_SEGMENT_STARTED",
        "DELETE_SEGMENT_FINISHED",
    ]


def _objects(segment_id: str) -> list[SegmentObject]:
    return [
        SegmentObject("log", f"{segment_id}.log", 1024, "a" * 64),
        SegmentObject("index", f"{segment_id}.index", 16, "b" * 64),
        SegmentObject("leader_epoch_checkpoint", f"{segment_id}.leader-epoch", 12, "c" * 64),
    ]


def test_finished_stores_objects_and_metadata(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "seg", 0, 99)
    assert store.transition_segment(
        SegmentTransition(
            "seg", S.COPY_SEGMENT_FINISHED, custom_metadata=b"rsm", objects=_objects("seg")
        ),
        actor="copier",
        now_ms=NOW + 1,
    )
    stored = {(o.kind, o.key, o.size, o.sha256) for o in store.segment_objects("seg")}
    assert stored == {tuple(o) for o in _objects("seg")}
    row = store.segment("seg")
    assert (row.custom_metadata, row.event_timestamp_ms) == (b"rsm", NOW + 1)
    assert store.events(segment_id="seg")[-1].details_dict == {"objects": 3}


def test_highest_remote_offset_only_moves_forward(store_url: str) -> None:
    store = new_store(store_url)
    assert store.partition(TOPIC_ID, PARTITION).highest_remote_offset == -1
    assert store.highest_remote_offset(TOPIC_ID, PARTITION) == -1
    add_segment(store, "low", 0, 99)
    add_segment(store, "high", 100, 199)

    store.transition_segment(
        SegmentTransition("high", S.COPY_SEGMENT_FINISHED), actor="c", now_ms=NOW
    )
    assert store.partition(TOPIC_ID, PARTITION).highest_remote_offset == 199
    store.transition_segment(
        SegmentTransition("low", S.COPY_SEGMENT_FINISHED), actor="c", now_ms=NOW
    )
    assert store.partition(TOPIC_ID, PARTITION).highest_remote_offset == 199
    assert store.highest_remote_offset(TOPIC_ID, PARTITION) == 199

    # Deleting the top segment: the watermark stays, the FINISHED-only view drops.
    store.transition_segment(
        SegmentTransition("high", S.DELETE_SEGMENT_STARTED), actor="c", now_ms=NOW
    )
    assert store.partition(TOPIC_ID, PARTITION).highest_remote_offset == 199
    assert store.highest_remote_offset(TOPIC_ID, PARTITION) == 99


def test_a_lost_finish_stores_no_objects(store_url: str) -> None:
    store = new_store(store_url)
    add_segment(store, "seg")
    assert store.transition_segment(
        SegmentTransition("seg", S.COPY_SEGMENT_FINISHED, objects=_objects("seg")),
        actor="w1",
        now_ms=NOW,
    )
    again = [SegmentObject("log", "other-key", 1, "d" * 64)]
    assert not store.transition_segment(
        SegmentTransition("seg", S.COPY_SEGMENT_FINISHED, objects=again), actor="w2", now_ms=NOW
    )
    assert {o.key for o in store.segment_objects("seg")} == {o.key for o in _objects("seg")}


@pytest.mark.parametrize(
    ("dst", "objects", "message"),
    [
        pytest.param(
            S.DELETE_SEGMENT_STARTED,
            [],
            "objects are only stored on COPY_SEGMENT_FINISHED",
            id="objects-on-delete-started",
        ),
        pytest.param(
            S.COPY_SEGMENT_FINISHED,
            [("blob", "k", 1, "x")],
            "unknown object kind 'blob'",
            id="unknown-object-kind",
        ),
        pytest.param(
            S.COPY_SEGMENT_FINISHED,
            [("log", "k", 1, "x")] * 2,
            "object kind log given twice",
            id="object-kind-given-twice",
        ),
    ],
)
def test_bad_objects_are_rejected_before_any_write(
    store_url: str, dst: S, objects: list, message: str
) -> None:
    store = new_store(store_url)
    add_segment(store, "seg")
    with pytest.raises(ValueError, match=message):
        store.transition_segment(
            SegmentTransition("seg", dst, objects=objects), actor="t", now_ms=NOW
        )
    assert store.segment("seg").state == S.COPY_SEGMENT_STARTED


def test_segments_listing_filters_and_orders(store_url: str) -> None:
    store = new_store(store_url)
    ids = {start: new_kafka_uuid() for start in (200, 0, 100)}
    for start, segment_id in ids.items():
        add_segment(store, segment_id, start, start + 99)
    store.transition_segment(
        SegmentTransition(ids[100], S.COPY_SEGMENT_FINISHED), actor="c", now_ms=NOW
    )

    assert [s.start_offset for s in store.segments(TOPIC_ID, PARTITION)] == [0, 100, 200]
    finished = store.segments(TOPIC_ID, PARTITION, states=[S.COPY_SEGMENT_FINISHED])
    assert [s.segment_id for s in finished] == [ids[100]]
    assert store.segments(TOPIC_ID, 5) == []
