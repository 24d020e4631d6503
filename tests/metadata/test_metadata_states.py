"""Kafka's isValidTransition tables, written out literally rather than derived from the code."""

from __future__ import annotations

import itertools

import pytest

from tierflow.metadata.states import (
    RemoteLogSegmentState,
    RemotePartitionDeleteState,
    TieredState,
    is_valid_partition_delete_transition,
    is_valid_segment_transition,
    is_valid_tiered_transition,
)

S = RemoteLogSegmentState
P = RemotePartitionDeleteState

VALID_SEGMENT = {
    (None, S.COPY_SEGMENT_STARTED),
    (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_STARTED),
    (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
    (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED),
    (S.COPY_SEGMENT_FINISHED, S.COPY_SEGMENT_FINISHED),
    (S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED),
    (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED),
    (S.DELETE_SEGMENT_FINISHED, S.DELETE_SEGMENT_FINISHED),
}
VALID_PARTITION_DELETE = {
    (None, P.DELETE_PARTITION_MARKED),
    (P.DELETE_PARTITION_MARKED, P.DELETE_PARTITION_MARKED),
    (P.DELETE_PARTITION_MARKED, P.DELETE_PARTITION_STARTED),
    (P.DELETE_PARTITION_STARTED, P.DELETE_PARTITION_STARTED),
    (P.DELETE_PARTITION_STARTED, P.DELETE_PARTITION_FINISHED),
    (P.DELETE_PARTITION_FINISHED, P.DELETE_PARTITION_FINISHED),
}


@pytest.mark.parametrize(("src", "dst"), list(itertools.product([None, *S], S)))
def test_segment_transition_table(src: S | None, dst: S) -> None:
    assert is_valid_segment_transition(src, dst) == ((src, dst) in VALID_SEGMENT)


@pytest.mark.parametrize(("src", "dst"), list(itertools.product([None, *P], P)))
def test_partition_delete_transition_table(src: P | None, dst: P) -> None:
    assert is_valid_partition_delete_transition(src, dst) == ((src, dst) in VALID_PARTITION_DELETE)


def test_delete_finished_cannot_go_back_to_copy_started() -> None:
    assert not is_valid_segment_transition(S.DELETE_SEGMENT_FINISHED, S.COPY_SEGMENT_STARTED)


def test_state_ids_match_kafka_wire_bytes() -> None:
    assert [state.id for state in S] == [0, 1, 2, 3]
    assert [state.id for state in P] == [0, 1, 2]
    assert S.for_id(2) is S.DELETE_SEGMENT_STARTED
    with pytest.raises(ValueError, match="id 7"):
        S.for_id(7)


def test_states_accept_their_names_as_strings() -> None:
    assert is_valid_segment_transition("COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED")
    assert str(S.COPY_SEGMENT_FINISHED) == "COPY_SEGMENT_FINISHED"


def test_tiered_state_machine_follows_kip_950() -> None:
    assert is_valid_tiered_transition(None, TieredState.ENABLED)
    assert is_valid_tiered_transition(TieredState.DISABLED, TieredState.ENABLED)
    assert is_valid_tiered_transition(TieredState.ENABLED, TieredState.DISABLING)
    assert is_valid_tiered_transition(TieredState.DISABLING, TieredState.DISABLED)
    assert not is_valid_tiered_transition(TieredState.DISABLING, TieredState.ENABLED)
    assert not is_valid_tiered_transition(TieredState.ENABLED, TieredState.DISABLED)
