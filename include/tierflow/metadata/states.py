"""Kafka's remote-storage state machines, as plain data so SQL and tests share one definition.

The segment and partition-delete machines follow ``RemoteLogSegmentState.isValidTransition`` and
``RemotePartitionDeleteState.isValidTransition`` exactly; the topic machine is KIP-950's
ENABLED/DISABLING/DISABLED lifecycle. Self-transitions are valid in Kafka so that retries and
failover are idempotent; the store treats them as no-ops.
"""

from __future__ import annotations

from enum import StrEnum


class RemoteLogSegmentState(StrEnum):
    COPY_SEGMENT_STARTED = "COPY_SEGMENT_STARTED"
    COPY_SEGMENT_FINISHED = "COPY_SEGMENT_FINISHED"
    DELETE_SEGMENT_STARTED = "DELETE_SEGMENT_STARTED"
    DELETE_SEGMENT_FINISHED = "DELETE_SEGMENT_FINISHED"

    @property
    def id(self) -> int:
        """The byte Kafka writes to ``__remote_log_metadata`` for this state."""
        return _SEGMENT_STATE_IDS[self]

    @classmethod
    def for_id(cls, state_id: int) -> RemoteLogSegmentState:
        for state, known in _SEGMENT_STATE_IDS.items():
            if known == state_id:
                return state
        raise ValueError(f"no RemoteLogSegmentState with id {state_id}")


class RemotePartitionDeleteState(StrEnum):
    DELETE_PARTITION_MARKED = "DELETE_PARTITION_MARKED"
    DELETE_PARTITION_STARTED = "DELETE_PARTITION_STARTED"
    DELETE_PARTITION_FINISHED = "DELETE_PARTITION_FINISHED"

    @property
    def id(self) -> int:
        return _PARTITION_DELETE_STATE_IDS[self]


class TieredState(StrEnum):
    """KIP-950 topic lifecycle: DISABLING lasts until the remote data is dealt with."""

    ENABLED = "ENABLED"
    DISABLING = "DISABLING"
    DISABLED = "DISABLED"


_SEGMENT_STATE_IDS: dict[RemoteLogSegmentState, int] = {
    RemoteLogSegmentState.COPY_SEGMENT_STARTED: 0,
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED: 1,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED: 2,
    RemoteLogSegmentState.DELETE_SEGMENT_FINISHED: 3,
}

_PARTITION_DELETE_STATE_IDS: dict[RemotePartitionDeleteState, int] = {
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
    # ENABLED(copy off), which may still be turned off with delete (§2.4).
    TieredState.DISABLING: frozenset({TieredState.ENABLED, TieredState.DISABLED}),
    TieredState.DISABLED: frozenset({None, TieredState.DISABLING}),
}


def is_valid_segment_transition(
    src: RemoteLogSegmentState | None, dst: RemoteLogSegmentState
) -> bool:
    dst = RemoteLogSegmentState(dst)
    src = None if src is None else RemoteLogSegmentState(src)
    return src == dst or src in SEGMENT_SOURCES[dst]


def is_valid_partition_delete_transition(
    src: RemotePartitionDeleteState | None, dst: RemotePartitionDeleteState
) -> bool:
    dst = RemotePartitionDeleteState(dst)
    src = None if src is None else RemotePartitionDeleteState(src)
    return src == dst or src in PARTITION_DELETE_SOURCES[dst]


def is_valid_tiered_transition(src: TieredState | None, dst: TieredState) -> bool:
    dst = TieredState(dst)
    src = None if src is None else TieredState(src)
    return src == dst or src in TIERED_SOURCES[dst]
