"""Two topic_disablement runs for one topic: request, then complete (unless rejected).

orders-0 and payments are tiered, and a copy of orders-1 was abandoned mid-way
(COPY_SEGMENT_STARTED, its objects uploaded): completing with either policy has remote work to
do, and retain must keep exactly the finished segments.
"""

from __future__ import annotations

from tests.concurrency import checks
from tests.reconcile.support import plant_stale_copy
from tests.support.tiered import NOW_MS, Tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import TieredState

TOPIC = "orders"
IN_PROGRESS = "TieredStorageDisablementInProgressError: TIERED_STORAGE_DISABLEMENT_IN_PROGRESS"
ALREADY_DISABLED = "InvalidConfigError: topic orders is already DISABLED with policy"
# What a request that did not win may hear: the disablement is in progress, or it resumed it
# (and completed it alongside), or it found the job done.
CLEAR_ANSWERS = ("requested", "resumed", "no-op")


def disable_run(policy: str, run_id: str) -> tuple[str, str, str, str]:
    return ("disable", TOPIC, policy, run_id)


def tiered_with_an_abandoned_copy(t: Tiered) -> None:
    """orders-0 and payments tiered; a killed copy left orders-1's first segment STARTED."""
    for log_ in t.logs():
        if log_.key != (TOPIC, 1):
            copy_partition(log_, t.store, t.rsm, owner="copy", clock=lambda: NOW_MS)
    plant_stale_copy(t, TOPIC, 1, NOW_MS)


def finished_ids(t: Tiered) -> set[str]:
    topic_id = t.store.topic(TOPIC).topic_id
    return {
        r.segment_id
        for p in t.store.partitions(topic_id)
        for r in t.store.segments(topic_id, p.partition, states=[S.COPY_SEGMENT_FINISHED])
    }


def topic_events(t: Tiered) -> list[tuple[str | None, str, str]]:
    topic_id = t.store.topic(TOPIC).topic_id
    return [
        (e.from_state, e.to_state, e.actor)
        for e in t.store.events(topic_id=topic_id, entity="topic")
    ]


def assert_disabled_consistently(t: Tiered, policy: str, finished_before: set[str]) -> None:
    """DISABLED with ``policy``, and the remote data in the state that policy leaves: retain
    keeps exactly the finished segments, delete none; no attempt is left half done."""
    topic = t.store.topic(TOPIC)
    assert (topic.state, topic.remote_log_disable_policy) == (TieredState.DISABLED, policy)
    assert finished_ids(t) == (finished_before if policy == "retain" else set())
    for partition in t.store.partitions(topic.topic_id):
        states = {r.state for r in t.store.segments(topic.topic_id, partition.partition)}
        assert states <= {S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_FINISHED}
        if policy == "delete":
            assert partition.highest_remote_offset == -1
            assert partition.log_start_offset == partition.local_log_start_offset
        assert partition.lease_owner is None
    checks.assert_each_transition_once(t.store)
    checks.assert_bucket_is_exactly_the_finished_objects(t)


def reported_deletions(outcome: dict) -> list[str]:
    complete = outcome["done"].get("complete")
    return list(complete["deleted_segments"]) if complete else []
