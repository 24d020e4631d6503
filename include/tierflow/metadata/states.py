"""Kafka's remote-storage state machines, as plain data so SQL and tests share one definition.

The segment and partition-delete machines follow ``RemoteLogSegmentState.isValidTransition`` and
``RemotePartitionDeleteState.isValidTransition`` exactly; the topic machine is KIP-950's
ENABLED/DISABLING/DISABLED lifecycle. Self-transitions are valid in Kafka so that retries and
failover are idempotent; the store treats them as no-ops.

Codes like D4 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Self


class _KafkaState(StrEnum):
    """A state of Kafka's remote-storage metadata, which its records carry as one byte."""

    @property
    def id(self) -> int:
        """The byte Kafka writes to ``__remote_log_metadata`` for this state."""
        return _STATE_IDS[self]

    @classmethod
    def for_id(cls, state_id: int) -> Self:
        for state in cls:
            if state.id == state_id:
                return state
        raise ValueError(f"no {cls.__name__} with id {state_id}")


class RemoteLogSegmentState(_KafkaState):
    COPY_SEGMENT_STARTED = "COPY_SEGMENT_STARTED"
    COPY_SEGMENT_FINISHED = "COPY_SEGMENT_FINISHED"
    DELETE_SEGMENT_STARTED = "DELETE_SEGMENT_STARTED"
    DELETE_SEGMENT_FINISHED = "DELETE_SEGMENT_FINISHED"


class RemotePartitionDeleteState(_KafkaState):
    DELETE_PARTITION_MARKED = "DELETE_PARTITION_MARKED"
    DELETE_PARTITION_STARTED = "DELETE_PARTITION_STARTED"
    DELETE_PARTITION_FINISHED = "DELETE_PARTITION_FINISHED"


class TieredState(StrEnum):
    """KIP-950 topic lifecycle: DISABLING lasts until the remote data is dealt with."""

    ENABLED = "ENABLED"
    DISABLING = "DISABLING"
    DISABLED = "DISABLED"


# Kafka's ids: RemoteLogSegmentState.id and RemotePartitionDeleteState.id.
_STATE_IDS: dict[_KafkaState, int] = {
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: 0,
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: 1,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: 2,
    RemoteLogSegmentState.DELETE_SEGMENT_FINISHED: 3,
    RemotePartitionDeleteState.DELETE_PARTITION_MARKED: 0,
    RemotePartitionDeleteState.DELETE_PARTITION_STARTED: 1,
    RemotePartitionDeleteState.DELETE_PARTITION_FINISHED: 2,
}

# dst -> the states it may be reached from, self excluded. None stands for "no row yet".
SEGMENT_SOURCES: dict[RemoteLogSegmentState, frozenset[RemoteLogSegmentState | None]] = {
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: frozenset({None}),
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: frozenset(
        {RemoteLogSegmentState.COPY_SEGMENT_STARTED}
    ),
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: frozenset(
        {RemoteLogSegmentState.COPY_SEGMENT_STARTED, RemoteLogSegmentState.COPY_SEGMENT_FINISHED}
    ),
    RemoteLogSegmentState.DELETE_SEGMENT_FINISHED: frozenset(
        {RemoteLogSegmentState.DELETE_SEGMENT_STARTED}
    ),
}

PARTITION_DELETE_SOURCES: dict[
    RemotePartitionDeleteState, frozenset[RemotePartitionDeleteState | None]
] = {
    RemotePartitionDeleteState.DELETE_PARTITION_MARKED: frozenset({None}),
    RemotePartitionDeleteState.DELETE_PARTITION_STARTED: frozenset(
        {RemotePartitionDeleteState.DELETE_PARTITION_MARKED}
    ),
    RemotePartitionDeleteState.DELETE_PARTITION_FINISHED: frozenset(
        {RemotePartitionDeleteState.DELETE_PARTITION_STARTED}
    ),
}

TIERED_SOURCES: dict[TieredState, frozenset[TieredState | None]] = {
    TieredState.ENABLED: frozenset({None, TieredState.DISABLED}),
    # DISABLED -> DISABLING only from retain to delete: retained data is Kafka's read-only
    # ENABLED(copy off), which may still be turned off with delete (D4).
    TieredState.DISABLING: frozenset({TieredState.ENABLED, TieredState.DISABLED}),
    TieredState.DISABLED: frozenset({None, TieredState.DISABLING}),
}


def is_valid_segment_transition(
    src: RemoteLogSegmentState | None, dst: RemoteLogSegmentState
) -> bool:
    return _is_valid(RemoteLogSegmentState, SEGMENT_SOURCES, src, dst)


def is_valid_partition_delete_transition(
    src: RemotePartitionDeleteState | None, dst: RemotePartitionDeleteState
) -> bool:
    return _is_valid(RemotePartitionDeleteState, PARTITION_DELETE_SOURCES, src, dst)


def is_valid_tiered_transition(src: TieredState | None, dst: TieredState) -> bool:
    return _is_valid(TieredState, TIERED_SOURCES, src, dst)


def _is_valid(
    kind: type[StrEnum], sources: Mapping[Any, frozenset[Any]], src: str | None, dst: str
) -> bool:
    """Kafka's isValidTransition over one of the tables above: a self-transition is valid."""
    target = kind(dst)
    source = None if src is None else kind(src)
    return source == target or source in sources[target]
