"""Whether a follower's leader-epoch lineage is a prefix of the leader's (Kafka's KIP-101 view)."""

from __future__ import annotations

import pytest

from tierflow.cluster.lineage import divergence
from tierflow.kafka.leader_epoch import EpochEntry


def lineage(*pairs: tuple[int, int]) -> list[EpochEntry]:
    return [EpochEntry(epoch, start) for epoch, start in pairs]


def never_read() -> int:
    raise AssertionError("the follower's log end offset was not needed")


LEADER = lineage((0, 0), (2, 100), (5, 250))


@pytest.mark.parametrize(
    ("follower", "end"),
    [
        pytest.param(lineage(), 0, id="empty-replica"),
        pytest.param(lineage((0, 0)), 100, id="stopped-where-epoch-2-began"),
        pytest.param(lineage((0, 0)), 40, id="far-behind"),
        pytest.param(lineage((0, 0), (2, 100)), 250, id="stopped-where-epoch-5-began"),
        # the current epoch: only what it fetched
        pytest.param(lineage((0, 0), (2, 100), (5, 250)), 10**6, id="in-the-current-epoch"),
        # its log start moved past the epoch's start
        pytest.param(lineage((2, 180), (5, 250)), 260, id="log-start-past-the-epoch-start"),
    ],
)
def test_followers_that_lag_have_not_diverged(follower: list[EpochEntry], end: int) -> None:
    assert divergence(LEADER, follower, lambda: end) is None


def test_epochs_below_the_leaders_log_start_are_not_compared() -> None:
    # The leader deleted up to offset 120: its checkpoint now starts at epoch 2, moved to 120.
    leader = lineage((2, 120), (5, 250))
    assert divergence(leader, lineage((0, 0), (2, 100), (5, 250)), never_read) is None


@pytest.mark.parametrize(
    ("follower", "end", "reason"),
    [
        pytest.param(
            lineage((0, 0)),
            130,
            "has offsets 100..129 in epoch 0, the leader in epoch 2",
            id="epoch-0-past-its-end",
        ),
        pytest.param(
            lineage((0, 0), (3, 90)),
            0,
            "has epoch 3 (from offset 90), the leader not",
            id="epoch-3-unknown-to-the-leader",
        ),
        pytest.param(
            lineage((0, 0), (2, 90)),
            0,
            "epoch 2 starts at offset 90, on the leader at 100",
            id="epoch-2-starts-earlier",
        ),
        pytest.param(
            lineage((0, 0), (2, 100), (6, 240)),
            0,
            "has epoch 6 (from offset 240), the leader",
            id="epoch-6-unknown-to-the-leader",
        ),
        pytest.param(
            lineage((0, 0), (2, 100)),
            251,
            "has offsets 250..250 in epoch 2",
            id="epoch-2-past-its-end",
        ),
    ],
)
def test_followers_with_records_the_leader_never_had_diverged(
    follower: list[EpochEntry], end: int, reason: str
) -> None:
    found = divergence(LEADER, follower, lambda: end)
    assert found is not None and found.startswith(reason)


def test_a_leader_without_epochs_and_a_follower_with_some() -> None:
    reason = divergence([], lineage((0, 0)), never_read)
    assert reason == "has leader epochs from 0 on, the leader none"
