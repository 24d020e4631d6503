"""RemotePartitionDeleteState in the store: every pair, repeated marks, events."""

from __future__ import annotations

import itertools

import pytest

from tests.metadata.metadata_support import NOW, PARTITION, TOPIC_ID, new_store
from tierflow.metadata import InvalidStateTransition, RemotePartitionDeleteState

P = RemotePartitionDeleteState
PATH_TO = {
    P.DELETE_PARTITION_MARKED: [P.DELETE_PARTITION_MARKED],
    P.DELETE_PARTITION_STARTED: [P.DELETE_PARTITION_MARKED, P.DELETE_PARTITION_STARTED],
    P.DELETE_PARTITION_FINISHED: [
        P.DELETE_PARTITION_MARKED,
        P.DELETE_PARTITION_STARTED,
        P.DELETE_PARTITION_FINISHED,
    ],
}
MOVES = {
    (None, P.DELETE_PARTITION_MARKED),
    (P.DELETE_PARTITION_MARKED, P.DELETE_PARTITION_STARTED),
    (P.DELETE_PARTITION_STARTED, P.DELETE_PARTITION_FINISHED),
}


@pytest.mark.parametrize(("src", "dst"), list(itertools.product([None, *P], P)))
def test_every_partition_delete_transition(store_url: str, src: P | None, dst: P) -> None:
    store = new_store(store_url)
    for step in [] if src is None else PATH_TO[src]:
        assert store.transition_partition_delete(TOPIC_ID, PARTITION, step, actor="s", now_ms=NOW)
    before = store.events(entity="partition_delete")

    def attempt() -> bool:
        return store.transition_partition_delete(
            TOPIC_ID, PARTITION, dst, actor="t", now_ms=NOW + 9
        )

    if src == dst:
        assert attempt() is False
        assert store.events(entity="partition_delete") == before
    elif (src, dst) in MOVES:
        assert attempt() is True
        last = store.events(entity="partition_delete")[-1]
        assert (last.partition, last.from_state, last.to_state) == (PARTITION, src, dst)
    else:
        with pytest.raises(InvalidStateTransition, match=f"-{PARTITION}: invalid state"):
            attempt()
        assert store.events(entity="partition_delete") == before

    row = store.partition_delete(TOPIC_ID, PARTITION)
    expected = dst if src == dst or (src, dst) in MOVES else src
    assert (None if row is None else row.state) == expected


def test_repeated_marks_are_counted_without_events(store_url: str) -> None:
    store = new_store(store_url)
    assert store.mark_partition_delete(TOPIC_ID, PARTITION, actor="a", now_ms=NOW) is True
    assert store.mark_partition_delete(TOPIC_ID, PARTITION, actor="b", now_ms=NOW + 1) is False
    assert store.mark_partition_delete(TOPIC_ID, PARTITION, actor="c", now_ms=NOW + 2) is False
    row = store.partition_delete(TOPIC_ID, PARTITION)
    assert (row.state, row.marks, row.event_timestamp_ms) == ("DELETE_PARTITION_MARKED", 3, NOW)
    assert len(store.events(entity="partition_delete")) == 1


def test_partition_deletes_listing(store_url: str) -> None:
    store = new_store(store_url)
    store.ensure_partition(TOPIC_ID, 1, log_start_offset=0, local_log_start_offset=0, now_ms=NOW)
    store.mark_partition_delete(TOPIC_ID, 1, actor="a", now_ms=NOW)
    store.mark_partition_delete(TOPIC_ID, 0, actor="a", now_ms=NOW)
    store.transition_partition_delete(
        TOPIC_ID, 1, P.DELETE_PARTITION_STARTED, actor="a", now_ms=NOW
    )
    assert [(d.partition, d.state) for d in store.partition_deletes()] == [
        (0, "DELETE_PARTITION_MARKED"),
        (1, "DELETE_PARTITION_STARTED"),
    ]
    started = store.partition_deletes(states=[P.DELETE_PARTITION_STARTED])
    assert [d.partition for d in started] == [1]
