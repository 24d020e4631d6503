"""Remote retention end to end: tiered data from a generated broker log dir, a SQLite store
and a local bucket; plans at an explicit ``now_ms`` and executes them."""

from __future__ import annotations

import pytest

from tests.retention.support import (
    ACTOR,
    HOUR_MS,
    FailingDeletes,
    add_remote_segment,
    configure,
    objects_of,
    rows,
    spans,
)
from tests.support.tiered import NOW_MS, Tiered
from tierflow.kafka.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    write_leader_epoch_checkpoint,
)
from tierflow.lifecycle.retention.remote import (
    RetentionError,
    RetentionReason,
    execute_remote_retention,
    plan_partition_retention,
    plan_store_retention,
)
from tierflow.metadata import SegmentTransition
from tierflow.metadata.states import RemoteLogSegmentState as S

R = RetentionReason
FINISHED = S.COPY_SEGMENT_FINISHED
LIVE = (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)


def plan_for(t: Tiered, topic: str, partition: int, *, now_ms: int = NOW_MS, **kw):
    topic_row = t.store.topic(topic)
    state = t.store.partition(topic_row.topic_id, partition)
    return plan_partition_retention(
        t.store, topic_row, state, now_ms=now_ms, log_=t.log(topic, partition), **kw
    )


def run(t: Tiered, topic: str, partition: int, *, now_ms: int = NOW_MS, **kw):
    plan = plan_for(t, topic, partition, now_ms=now_ms, **kw)
    return plan, execute_remote_retention(plan, t.store, t.rsm, actor=ACTOR, clock=lambda: now_ms)


def log_start(t: Tiered, topic: str, partition: int) -> int:
    return t.store.partition(t.store.topic(topic).topic_id, partition).log_start_offset


def test_retention_ms_deletes_expired_segments_and_their_objects(tiered_any_layout: Tiered):
    t = tiered_any_layout
    finished = rows(t, "orders", 0, FINISHED)
    ages = [NOW_MS - r.max_timestamp_ms for r in finished]
    assert ages[0] > ages[1] > 30 * HOUR_MS > ages[2], "generator changed; adjust the test"
    configure(t, "orders", retention_ms=30 * HOUR_MS)
    keys = [objects_of(t, r.segment_id) for r in finished]
    assert all(k.is_file() for ks in keys for k in ks)

    plan, report = run(t, "orders", 0)
    assert [(d.segment_id, d.reason) for d in plan.deletions] == [
        (finished[0].segment_id, R.RETENTION_MS),
        (finished[1].segment_id, R.RETENTION_MS),
    ]
    assert [d.size_bytes for d in plan.deletions] == [r.segment_size_bytes for r in finished[:2]]
    assert report.freed_bytes == plan.total_bytes and report.errors == []
    assert spans(rows(t, "orders", 0, *LIVE)) == spans(finished[2:])
    assert log_start(t, "orders", 0) == finished[1].end_offset + 1
    assert not any(k.exists() for ks in keys[:2] for k in ks)
    assert all(k.is_file() for k in keys[2])


def test_same_night_evaluated_later_is_the_same_plan(tiered: Tiered):
    """now_ms, not the wall clock: a backfill of an old night expires what it did then."""
    configure(tiered, "orders", retention_ms=30 * HOUR_MS)
    earlier = NOW_MS - 100 * HOUR_MS
    assert plan_for(tiered, "orders", 0, now_ms=earlier).deletions == []
    assert len(plan_for(tiered, "orders", 0).deletions) == 2


def test_retention_bytes_counts_only_local_bytes_too(tiered: Tiered):
    log_ = tiered.log("orders", 0)
    finished = rows(tiered, "orders", 0, FINISHED)
    remote = sum(r.segment_size_bytes for r in finished)
    only_local = log_.segments()[-1].size_in_bytes()  # the active segment, above the remote
    # Room for the only-local bytes and two remote segments, not three: the oldest goes.
    limit = only_local + remote - finished[0].segment_size_bytes
    configure(tiered, "orders", retention_bytes=limit)
    plan, report = run(tiered, "orders", 0)
    assert [(d.segment_id, d.reason) for d in plan.deletions] == [
        (finished[0].segment_id, R.RETENTION_BYTES)
    ]
    assert report.new_log_start_offset == finished[0].end_offset + 1
    # Kafka's greedy rule deletes a segment only if it fits inside the breach entirely: one
    # byte over deletes nothing, a whole segment over deletes the next one.
    configure(tiered, "orders", retention_bytes=limit - 1)
    assert plan_for(tiered, "orders", 0).deletions == []
    configure(tiered, "orders", retention_bytes=limit - finished[1].segment_size_bytes)
    plan, _ = run(tiered, "orders", 0)
    assert [(d.segment_id, d.reason) for d in plan.deletions] == [
        (finished[1].segment_id, R.RETENTION_BYTES)
    ]


def test_log_start_offset_breach(tiered: Tiered):
    """DeleteRecords moved the log start past the first segment: it goes, nothing else."""
    topic_id = tiered.store.topic("payments").topic_id
    finished = rows(tiered, "payments", 0, FINISHED)
    moved_to = finished[0].end_offset + 10  # inside the second segment
    tiered.store.ensure_partition(
        topic_id, 0, log_start_offset=moved_to, local_log_start_offset=moved_to, now_ms=NOW_MS
    )
    plan, _ = run(tiered, "payments", 0)
    assert [(d.segment_id, d.reason) for d in plan.deletions] == [
        (finished[0].segment_id, R.LOG_START_OFFSET)
    ]
    assert plan.new_log_start_offset is None
    assert log_start(tiered, "payments", 0) == moved_to
    assert spans(rows(tiered, "payments", 0, *LIVE)) == spans(finished[1:])


def test_unclean_leader_election_cleans_segments_older_than_the_earliest_epoch(tiered: Tiered):
    """The new leader's leader-epoch cache starts at epoch 2: remote segments written under
    epochs 0 and 1 only are unreachable and deleted (E8); a segment from a diverged leader whose
    epochs are not all older (epoch 5 never made it into this log) stays (E10) and does not
    stop the scan."""
    log_ = tiered.log("orders", 0)
    finished = rows(tiered, "orders", 0, FINISHED)
    assert [r.leader_epochs for r in finished] == [
        [(0, 0)],
        [(0, 589), (2, 890), (3, 1192)],
        [(3, 1208), (4, 1510)],
    ], "generator changed; adjust the test"
    epoch_1 = add_remote_segment(tiered, "orders", 0, 589, 700, [(1, 589)])
    epoch_5 = add_remote_segment(tiered, "orders", 0, 1192, 1500, [(3, 1192), (5, 1400)])
    write_leader_epoch_checkpoint(
        log_.path / LEADER_EPOCH_CHECKPOINT,
        [EpochEntry(2, 589), EpochEntry(3, 1192), EpochEntry(4, 1510)],
    )
    # Expire the two oldest segments, keep the newest.
    configure(tiered, "orders", retention_ms=30 * HOUR_MS)
    plan, report = run(tiered, "orders", 0)
    assert [(d.segment_id, d.reason) for d in plan.deletions] == [
        (finished[1].segment_id, R.RETENTION_MS),
        (finished[0].segment_id, R.OUTSIDE_LINEAGE),
        (epoch_1, R.OUTSIDE_LINEAGE),
    ]
    assert report.errors == []
    assert plan.new_log_start_offset == finished[1].end_offset + 1  # E8 does not move it
    left = rows(tiered, "orders", 0, *LIVE)
    assert [r.segment_id for r in left] == [epoch_5, finished[2].segment_id]


def test_failed_storage_delete_is_retried_by_the_next_run(tiered_any_layout: Tiered):
    t = tiered_any_layout
    configure(t, "orders", retention_ms=30 * HOUR_MS)
    finished = rows(t, "orders", 0, FINISHED)
    victim = finished[0].segment_id
    failing = FailingDeletes(t.rsm.objects, fail_if=victim)  # type: ignore[attr-defined]
    t.rsm.objects = failing  # type: ignore[attr-defined]

    plan = plan_for(t, "orders", 0)
    with pytest.raises(RetentionError, match=victim) as raised:
        execute_remote_retention(plan, t.store, t.rsm, actor=ACTOR, clock=lambda: NOW_MS)
    report = raised.value.report
    assert [e.segment_id for e in report.errors] == [victim]
    assert "injected delete failure" in report.errors[0].message
    assert [d.segment_id for d in report.deleted] == [finished[1].segment_id]  # carried on
    assert t.store.segment(victim).state == S.DELETE_SEGMENT_STARTED
    assert failing.failures == 1

    failing.fail_if = ""  # storage is back
    plan, report = run(t, "orders", 0)
    assert [(d.segment_id, d.reason) for d in plan.deletions] == [(victim, R.RETRY_DELETE)]
    assert report.errors == [] and [d.segment_id for d in report.deleted] == [victim]
    assert t.store.segment(victim).state == S.DELETE_SEGMENT_FINISHED
    assert not any(p.exists() for p in objects_of(t, victim))


def test_stale_copy_is_removed_but_a_live_attempt_is_left_alone(tiered: Tiered):
    topic_id = tiered.store.topic("orders").topic_id
    old = NOW_MS - 3 * HOUR_MS
    abandoned = add_remote_segment(
        tiered, "orders", 0, 1779, 1800, [(4, 1779)], finished=False, now_ms=old
    )
    in_flight = add_remote_segment(
        tiered, "orders", 1, 1147, 1727, [(3, 1147)], finished=False, now_ms=old
    )
    # A copy of orders-1 is running: it holds an unexpired lease.
    assert tiered.store.acquire_lease(topic_id, 1, "copy-worker", now_ms=NOW_MS, ttl_ms=HOUR_MS)

    plans = {
        p.partition: p
        for p in plan_store_retention(
            tiered.store, now_ms=NOW_MS, logs=tiered.logs(), topics=["orders"]
        )
    }
    assert [(d.segment_id, d.reason) for d in plans[0].deletions] == [(abandoned, R.STALE_COPY)]
    assert plans[1].deletions == []
    for plan in plans.values():
        execute_remote_retention(plan, tiered.store, tiered.rsm, actor=ACTOR, clock=lambda: NOW_MS)
    assert tiered.store.segment(abandoned).state == S.DELETE_SEGMENT_FINISHED
    assert tiered.store.segment(in_flight).state == S.COPY_SEGMENT_STARTED
    assert log_start(tiered, "orders", 0) == 0  # an orphan never moves the log start

    # Once the lease has expired (the worker died), the next run cleans the orphan up.
    later = NOW_MS + 2 * HOUR_MS
    plan, _ = run(tiered, "orders", 1, now_ms=later)
    assert [(d.segment_id, d.reason) for d in plan.deletions] == [(in_flight, R.STALE_COPY)]
    assert tiered.store.segment(in_flight).state == S.DELETE_SEGMENT_FINISHED


def test_a_stale_copy_that_finished_meanwhile_is_not_deleted(tiered: Tiered):
    slow = add_remote_segment(
        tiered, "orders", 0, 1779, 1800, [(4, 1779)], finished=False, now_ms=NOW_MS - 3 * HOUR_MS
    )
    plan = plan_for(tiered, "orders", 0)
    assert plan.segment_ids == [slow]
    tiered.store.transition_segment(
        SegmentTransition(slow, FINISHED, objects=[]), actor="copy", now_ms=NOW_MS
    )
    report = execute_remote_retention(
        plan, tiered.store, tiered.rsm, actor=ACTOR, clock=lambda: NOW_MS
    )
    assert report.deleted == [] and report.skipped[0][0] == slow
    assert tiered.store.segment(slow).state == FINISHED


def test_running_twice_deletes_nothing_more(tiered: Tiered):
    configure(tiered, "orders", retention_ms=30 * HOUR_MS)
    plan, first = run(tiered, "orders", 0)
    assert len(first.deleted) == 2
    events = len(tiered.store.events())
    # The same plan again (a retried task) and a fresh plan for the same night.
    again = execute_remote_retention(
        plan, tiered.store, tiered.rsm, actor=ACTOR, clock=lambda: NOW_MS
    )
    assert again.deleted == [] and sorted(again.already_deleted) == sorted(plan.segment_ids)
    assert again.new_log_start_offset is None
    fresh, report = run(tiered, "orders", 0)
    assert fresh.deletions == [] and report.deleted == []
    assert len(tiered.store.events()) == events


def test_log_start_offset_advances_before_any_delete(tiered: Tiered):
    configure(tiered, "orders", retention_ms=30 * HOUR_MS)
    topic_id = tiered.store.topic("orders").topic_id
    plan, _ = run(tiered, "orders", 0)
    history = [
        (e.entity, e.to_state, e.segment_id)
        for e in tiered.store.events(topic_id=topic_id, partition=0)
        if e.actor == ACTOR
    ]
    first, second = plan.segment_ids
    assert history == [
        ("partition", "OFFSETS_ADVANCED", None),
        ("segment", S.DELETE_SEGMENT_STARTED, first),
        ("segment", S.DELETE_SEGMENT_FINISHED, first),
        ("segment", S.DELETE_SEGMENT_STARTED, second),
        ("segment", S.DELETE_SEGMENT_FINISHED, second),
    ]
    advanced = [
        e.details_dict
        for e in tiered.store.events(topic_id=topic_id, entity="partition")
        if e.actor == ACTOR
    ]
    # L6: the local log start is raised along with it.
    moved = [0, plan.new_log_start_offset]
    assert advanced == [{"log_start_offset": moved, "local_log_start_offset": moved}]


def test_store_plan_covers_tiered_topics_only_and_reasons_match(tiered: Tiered):
    configure(tiered, "orders", retention_ms=30 * HOUR_MS)
    # Disabled with policy "delete": its remote data is being deleted, not expired.
    configure(tiered, "payments", remote_storage_enable=False, remote_log_disable_policy="delete")
    plans = plan_store_retention(tiered.store, now_ms=NOW_MS, logs=tiered.logs())
    assert [(p.topic, p.partition) for p in plans] == [("orders", 0), ("orders", 1)]
    for plan in plans:
        for deletion in plan.deletions:
            row = tiered.store.segment(deletion.segment_id)
            assert deletion.reason == R.RETENTION_MS
            assert row.max_timestamp_ms < NOW_MS - 30 * HOUR_MS
            assert deletion.size_bytes == row.segment_size_bytes
            assert deletion.state == row.state


def test_a_topic_disabled_with_retain_still_expires(tiered: Tiered):
    """KIP-950: with "retain" the remote data stays readable and still expires by retention.*"""
    configure(tiered, "payments", remote_storage_enable=False)  # the default policy: retain
    plans = plan_store_retention(tiered.store, now_ms=NOW_MS, logs=tiered.logs())
    assert ("payments", 0) in [(p.topic, p.partition) for p in plans]


def test_plan_without_the_log_dir_rebuilds_the_lineage_from_the_store(tiered: Tiered):
    configure(tiered, "orders", retention_ms=30 * HOUR_MS)
    with_log = plan_for(tiered, "orders", 0)
    topic = tiered.store.topic("orders")
    without = plan_partition_retention(
        tiered.store, topic, tiered.store.partition(topic.topic_id, 0), now_ms=NOW_MS
    )
    assert without.deletions == with_log.deletions
    assert without.new_log_start_offset == with_log.new_log_start_offset
