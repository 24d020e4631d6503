"""The store-level rules the overlapping runs rely on, with the interleaving spelled out in one
process (the other tests in this directory get there with real processes).

* Two callers deleting one segment: each transition is recorded once, by whoever gets there
  first; the other caller gets False, not an error, and does not count it as its own.
* A COPY_SEGMENT_STARTED row judged abandoned (by a copy's cleanup, retention's stale-copy rule,
  reconcile) is deleted only if it still is: a copy that finished since is data.
* A lease taken over (same owner, a later attempt) fences the old attempt's writes.
"""

from __future__ import annotations

import pytest

from tests.support.tiered import NOW_MS, Tiered
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.plan import CopyPlan
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import rewrite_segment
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata import SegmentTransition, StartedSegment
from tierflow.metadata.errors import InvalidStateTransition, LeaseLostError
from tierflow.metadata.states import RemoteLogSegmentState as S


def first_segment_started(t: Tiered) -> CopyPlan:
    """payments-0's first segment COPY_SEGMENT_STARTED by owner "copy", under its lease."""
    return prepare_copy(
        t.log("payments", 0),
        t.store,
        rsm=t.rsm,
        owner=CopyOwner("copy"),
        clock=lambda: NOW_MS,
        max_segments=1,
    )


def one_started(t: Tiered) -> str:
    """payments-0's first segment uploaded and COPY_SEGMENT_STARTED; the lease is released."""
    job = first_segment_started(t).jobs[0]
    assert rewrite_segment(job, t.rsm).error is None
    t.store.release_lease(job.topic_id, 0, "copy")
    return job.segment_id


def payments_keys(t: Tiered) -> set[str]:
    return {key for key in t.rsm.objects.list("") if key.startswith("payments-")}


def segment_events(t: Tiered, segment_id: str) -> list[str]:
    return [e.to_state for e in t.store.events(segment_id=segment_id)]


def test_the_second_of_two_deleters_finds_it_done(fresh) -> None:
    t = fresh("env")
    segment_id = one_started(t)
    topic = t.store.topic("payments")
    read_by_both = t.store.segment(segment_id)

    first = delete_remote_segment(t.store, t.rsm, topic, read_by_both, actor="a", now_ms=NOW_MS)
    second = delete_remote_segment(t.store, t.rsm, topic, read_by_both, actor="b", now_ms=NOW_MS)

    assert (first, second) == (True, False)
    assert segment_events(t, segment_id) == [
        S.COPY_SEGMENT_STARTED,
        S.DELETE_SEGMENT_STARTED,
        S.DELETE_SEGMENT_FINISHED,
    ]


def test_a_deleter_that_joins_a_started_delete_finishes_it_once(fresh) -> None:
    t = fresh("env")
    segment_id = one_started(t)
    topic = t.store.topic("payments")
    stale = t.store.segment(segment_id)
    # The first deleter recorded DELETE_SEGMENT_STARTED and is still deleting the objects.
    t.store.transition_segment(
        SegmentTransition(segment_id, S.DELETE_SEGMENT_STARTED), actor="a", now_ms=NOW_MS
    )

    assert delete_remote_segment(t.store, t.rsm, topic, stale, actor="b", now_ms=NOW_MS)
    assert not t.store.transition_segment(
        SegmentTransition(segment_id, S.DELETE_SEGMENT_FINISHED), actor="a", now_ms=NOW_MS
    )
    assert [(e.to_state, e.actor) for e in t.store.events(segment_id=segment_id)][1:] == [
        (S.DELETE_SEGMENT_STARTED, "a"),
        (S.DELETE_SEGMENT_FINISHED, "b"),
    ]
    assert payments_keys(t) == set()


def test_an_abandoned_copy_that_finished_meanwhile_is_kept(fresh) -> None:
    t = fresh("env")
    plan = first_segment_started(t)
    job = plan.jobs[0]
    judged_abandoned = t.store.segment(job.segment_id)  # read while still STARTED
    report = finalize_copy(
        plan, {job.segment_id: rewrite_segment(job, t.rsm)}, t.store, t.rsm, owner="copy"
    )
    assert [c.segment_id for c in report.copied] == [job.segment_id]

    topic = t.store.topic("payments")
    assert not delete_remote_segment(
        t.store, t.rsm, topic, judged_abandoned, actor="retention", now_ms=NOW_MS, abandoned=True
    )
    assert t.store.segment(job.segment_id).state == S.COPY_SEGMENT_FINISHED
    assert segment_events(t, job.segment_id) == [S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED]
    assert payments_keys(t) == {o.key for o in t.store.segment_objects(job.segment_id)}


def test_only_from_refuses_a_state_the_caller_did_not_decide_on(fresh) -> None:
    t = fresh("env")
    segment_id = one_started(t)
    t.store.transition_segment(
        SegmentTransition(segment_id, S.COPY_SEGMENT_FINISHED), actor="copy", now_ms=NOW_MS
    )
    with pytest.raises(InvalidStateTransition, match="COPY_SEGMENT_FINISHED -> DELETE_SEG"):
        t.store.transition_segment(
            SegmentTransition(
                segment_id, S.DELETE_SEGMENT_STARTED, only_from=[S.COPY_SEGMENT_STARTED]
            ),
            actor="cleanup",
            now_ms=NOW_MS,
        )
    assert t.store.segment(segment_id).state == S.COPY_SEGMENT_FINISHED


def test_a_taken_over_lease_fences_the_old_attempts_writes(fresh) -> None:
    """Two takings by one owner in the same millisecond still get different tokens; the first
    can then neither start, finish nor delete a segment, nor release the second's lease."""
    t = fresh("env")
    segment_id = one_started(t)
    topic_id = t.store.topic("payments").topic_id
    old = t.store.take_lease(topic_id, 0, "copy", now_ms=NOW_MS, ttl_ms=60_000)
    new = t.store.take_lease(topic_id, 0, "copy", now_ms=NOW_MS, ttl_ms=60_000)
    assert old is not None and new is not None and old.token != new.token

    with pytest.raises(LeaseLostError):
        t.store.transition_segment(
            SegmentTransition(segment_id, S.COPY_SEGMENT_FINISHED),
            actor="old",
            now_ms=NOW_MS,
            lease=old,
        )
    with pytest.raises(LeaseLostError):
        t.store.add_segment(
            StartedSegment(
                segment_id="never-written",
                topic_id=topic_id,
                partition=0,
                start_offset=729,
                end_offset=1470,
                max_timestamp_ms=NOW_MS,
                segment_leader_epochs=[(0, 729)],
                segment_size_bytes=1,
                txn_index_empty=True,
            ),
            actor="old",
            now_ms=NOW_MS,
            lease=old,
        )
    assert not t.store.release_lease(topic_id, 0, "copy", token=old.token)
    assert t.store.segment(segment_id).state == S.COPY_SEGMENT_STARTED
    assert [r.segment_id for r in t.store.segments(topic_id, 0)] == [segment_id]

    assert t.store.transition_segment(
        SegmentTransition(segment_id, S.COPY_SEGMENT_FINISHED),
        actor="new",
        now_ms=NOW_MS,
        lease=new,
    )
    assert t.store.release_lease(topic_id, 0, "copy", token=new.token)
    assert t.store.partition(topic_id, 0).lease_owner is None
