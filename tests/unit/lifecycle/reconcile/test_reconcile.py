"""Reconcile finds each planted anomaly, fixes exactly the fixable ones, and keeps data loss
visible: the "done when" of issue 5's orphan reconciliation."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.reconcile.support import (
    ACTOR,
    DAY_MS,
    HOUR_MS,
    Planted,
    bucket_keys,
    build_planted,
    keys_of,
    objects,
    plant_stale_copy,
    put_old,
    recorded_work,
    tier_all,
)
from tests.retention.support import FailingDeletes
from tests.support.progress import HeardProgress
from tests.support.tiered import LAYOUTS, Tiered, build_tiered
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.reconcile import (
    Action,
    FindingKind,
    ReconcileGrace,
    ReconcilePlan,
    ReconcileReport,
    ReconcileScope,
    Result,
    apply_reconcile,
    plan_reconcile,
    reconcile_summary,
)
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata import StartedSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.rsm import ObjectInfo
from tierflow.storage.keys import partition_prefix
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.wal_keys import new_wal_object_key


def plan(
    t: Tiered,
    *,
    grace_ms: int = DAY_MS,
    store_objects: ObjectStore | None = None,
    topics: list[str] | None = None,
    **kw,
):
    return plan_reconcile(
        t.store,
        store_objects or objects(t),
        ReconcileScope(t.settings.storage.prefix, topics=topics),
        ReconcileGrace(wall_clock_ms(), grace_ms, HOUR_MS),
        **kw,
    )


def apply(t: Tiered, p: ReconcilePlan, store_objects: ObjectStore | None = None):
    return apply_reconcile(
        p, t.store, t.rsm, store_objects or objects(t), actor=ACTOR, now_ms=wall_clock_ms()
    )


def found(p: ReconcilePlan) -> set[tuple[str, str]]:
    return {(f.kind.value, f.key or f.segment_id or "") for f in p.findings}


def by_kind(p: ReconcilePlan, kind: FindingKind) -> list:
    return [f for f in p.findings if f.kind is kind]


def snapshot(t: Tiered) -> tuple[int, set[str], dict[str, str]]:
    """Events, keys, and every segment's state: what a dry run must leave as it was."""
    states = {
        row.segment_id: row.state
        for topic in t.store.topics()
        for partition in t.store.partitions(topic.topic_id)
        for row in t.store.segments(topic.topic_id, partition.partition)
    }
    return len(t.store.events()), bucket_keys(t), states


def transitions(t: Tiered, segment_id: str) -> list[tuple[str | None, str, str]]:
    return [
        (e.from_state, e.to_state, e.actor)
        for e in t.store.events(segment_id=segment_id, entity="segment")
    ]


@pytest.fixture(params=sorted(LAYOUTS))
def planted(request: pytest.FixtureRequest, tmp_path: Path) -> Planted:
    return build_planted(tmp_path, layout=request.param)


def test_dry_run_finds_exactly_what_was_planted_and_changes_nothing(planted: Planted) -> None:
    t = planted.t
    before = snapshot(t)

    p = plan(t)

    assert found(p) == planted.expected_findings()
    assert snapshot(t) == before
    actionable = {f.key or f.segment_id for f in p.actionable}
    assert actionable == planted.old_orphans | {planted.stale_copy, planted.stale_delete}
    for finding in by_kind(p, FindingKind.MISSING_OBJECT) + by_kind(p, FindingKind.SIZE_MISMATCH):
        assert finding.action is Action.REPORT_ONLY and not finding.actionable
        assert finding.data_loss and "metadata is kept" in finding.message
    (missing,) = by_kind(p, FindingKind.MISSING_OBJECT)
    assert missing.segment_id == planted.missing_segment
    (short,) = by_kind(p, FindingKind.SIZE_MISMATCH)
    assert short.segment_id == planted.truncated_segment
    assert "has 10 bytes" in short.message
    (tombstone,) = [f for f in p.findings if f.key == planted.tombstone_orphan]
    assert "DELETE_SEGMENT_FINISHED" in tombstone.message
    (foreign,) = [f for f in p.findings if f.key == planted.foreign_orphan]
    assert foreign.topic is None and "outside every registered topic" in foreign.message
    (stray,) = [f for f in p.findings if f.key == planted.unregistered_orphan]
    assert (stray.topic, stray.partition) == ("orders", 7)
    (fresh,) = [f for f in p.findings if f.key == planted.fresh_orphan]
    assert not fresh.actionable and fresh.age_ms is not None and fresh.age_ms < HOUR_MS
    assert p.counts()[FindingKind.ORPHAN_OBJECT] == 5


def test_apply_fixes_exactly_the_fixable_ones_through_the_state_machine(planted: Planted) -> None:
    t = planted.t
    stale_copy_keys = keys_of(t, planted.stale_copy)
    stale_delete_keys = keys_of(t, planted.stale_delete)
    assert stale_copy_keys and stale_delete_keys
    keys_before = bucket_keys(t)

    report = apply(t, plan(t))

    fixed = {o.finding.key or o.finding.segment_id for o in report.fixed}
    assert fixed == planted.old_orphans | {planted.stale_copy, planted.stale_delete}
    assert report.failed == []
    gone = planted.old_orphans | stale_copy_keys | stale_delete_keys
    assert bucket_keys(t) == keys_before - gone
    assert transitions(t, planted.stale_copy)[-2:] == [
        (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED, ACTOR),
        (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED, ACTOR),
    ]
    assert transitions(t, planted.stale_delete)[-1] == (
        S.DELETE_SEGMENT_STARTED,
        S.DELETE_SEGMENT_FINISHED,
        ACTOR,
    )
    # Data loss is left exactly as found, metadata and all.
    for segment_id, key in (
        (planted.missing_segment, planted.missing_key),
        (planted.truncated_segment, planted.truncated_key),
    ):
        assert t.store.segment(segment_id).state == S.COPY_SEGMENT_FINISHED
        assert key in {o.key for o in t.store.segment_objects(segment_id)}
    assert planted.truncated_key in bucket_keys(t)
    kept = {o.finding.key for o in report.with_result(Result.KEPT)}
    assert kept == {planted.fresh_orphan, planted.missing_key, planted.truncated_key}
    assert {o.finding.key for o in report.remaining} == kept


def test_a_second_apply_is_a_no_op(planted: Planted) -> None:
    t = planted.t
    apply(t, plan(t))
    before = snapshot(t)

    again = plan(t)
    report = apply(t, again)

    assert found(again) == {
        (FindingKind.ORPHAN_OBJECT.value, planted.fresh_orphan),
        (FindingKind.MISSING_OBJECT.value, planted.missing_key),
        (FindingKind.SIZE_MISMATCH.value, planted.truncated_key),
    }
    assert report.fixed == [] and report.failed == []
    assert snapshot(t) == before


def test_grace_zero_deletes_fresh_orphans_too_but_never_data(tmp_path: Path) -> None:
    planted = build_planted(tmp_path)
    t = planted.t
    report = apply(t, plan(t, grace_ms=0))
    assert planted.fresh_orphan in {o.finding.key for o in report.fixed}
    assert not bucket_keys(t) & planted.orphans
    assert {o.finding.kind for o in report.remaining} == {
        FindingKind.MISSING_OBJECT,
        FindingKind.SIZE_MISMATCH,
    }


def test_a_clean_bucket_has_no_findings(tmp_path: Path) -> None:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    tier_all(t, wall_clock_ms() - DAY_MS)
    p = plan(t, grace_ms=0)
    assert p.findings == []
    assert p.partitions_checked == 3 and p.objects_listed == len(bucket_keys(t))


def test_diskless_wal_objects_are_left_to_the_diskless_gc(tmp_path: Path) -> None:
    """A WAL object holds batches of many partitions under no topic's prefix; reconcile must
    not take a live one for an orphan (the diskless GC judges them against the coordinator)."""
    planted = build_planted(tmp_path, storage_prefix="tiered")
    t = planted.t
    wal = put_old(t, new_wal_object_key("tiered"), b"\x00batches", planted.old_ms)
    not_wal = put_old(t, "tiered/diskless/wal/not-a-uuid", b"?", planted.old_ms)
    p = plan(t, grace_ms=0)
    assert wal not in {f.key for f in p.findings}
    assert not_wal in {f.key for f in p.findings}
    apply(t, p)
    assert wal in bucket_keys(t) and not_wal not in bucket_keys(t)


def test_only_the_storage_prefix_is_reconciled(tmp_path: Path) -> None:
    planted = build_planted(tmp_path, storage_prefix="tiered")
    t = planted.t
    outside = put_old(t, "other-app/data.bin", b"not ours", planted.old_ms)
    assert all(key.startswith("tiered/") for key in planted.orphans)

    p = plan(t)
    assert found(p) == planted.expected_findings()
    apply(t, p)
    assert outside in bucket_keys(t)


def test_topic_filter_checks_only_that_topic(planted: Planted) -> None:
    t = planted.t
    p = plan(t, topics=["payments"])
    assert found(p) == {(FindingKind.STALE_COPY.value, planted.stale_copy)}
    assert p.partitions_checked == 1


def test_a_partition_under_removal_is_left_to_the_remover(planted: Planted) -> None:
    t = planted.t
    orders = t.store.topic("orders")
    t.store.mark_partition_delete(orders.topic_id, 0, actor="test", now_ms=wall_clock_ms())
    before = snapshot(t)

    p = plan(t)

    (skipped,) = by_kind(p, FindingKind.PARTITION_BEING_REMOVED)
    assert (skipped.topic, skipped.partition, skipped.actionable) == ("orders", 0, False)
    assert "DELETE_PARTITION_MARKED" in skipped.message
    in_p0 = {planted.old_orphan, planted.fresh_orphan, planted.stale_delete, planted.missing_key}
    assert not {f.key or f.segment_id for f in p.findings} & in_p0
    p0 = partition_prefix("", "orders", orders.topic_id, 0)
    p0_keys = {key for key in before[1] if key.startswith(p0)}

    report = apply(t, p)

    assert {key for key in bucket_keys(t) if key.startswith(p0)} == p0_keys
    assert t.store.segment(planted.stale_delete).state == S.DELETE_SEGMENT_STARTED
    assert skipped not in [o.finding for o in report.remaining]
    assert t.store.segment(planted.stale_copy).state == S.DELETE_SEGMENT_FINISHED


def test_a_copy_with_a_live_lease_or_young_row_is_not_stale(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    payments = t.store.topic("payments")
    now = wall_clock_ms()
    segment_id = plant_stale_copy(t, "payments", 0, now - 3 * DAY_MS)
    assert by_kind(plan(t), FindingKind.STALE_COPY)
    # A live copy holds the lease: whatever it started may still be finishing.
    t.store.acquire_lease(payments.topic_id, 0, "live-copy", now_ms=now, ttl_ms=HOUR_MS)
    assert by_kind(plan(t), FindingKind.STALE_COPY) == []
    assert keys_of(t, segment_id)  # and its objects are not orphans either
    assert by_kind(plan(t), FindingKind.ORPHAN_OBJECT) == []


def test_apply_rechecks_each_finding_first(tmp_path: Path) -> None:
    planted = build_planted(tmp_path)
    t = planted.t
    p = plan(t)
    # Between planning and applying: a copy takes the stale copy's partition lease, the old
    # orphan is written again, and another worker finishes the stale delete.
    payments = t.store.topic("payments")
    t.store.acquire_lease(payments.topic_id, 0, "live-copy", now_ms=wall_clock_ms(), ttl_ms=HOUR_MS)
    objects(t).put_bytes(planted.old_orphan, b"rewritten")
    row = t.store.segment(planted.stale_delete)
    topic = t.store.topic_by_id(row.topic_id)
    delete_remote_segment(t.store, t.rsm, topic, row, actor="retention", now_ms=wall_clock_ms())

    report = apply(t, p)

    results = {o.finding.key or o.finding.segment_id: o.result for o in report.outcomes}
    assert results[planted.stale_copy] is Result.SKIPPED
    assert results[planted.old_orphan] is Result.SKIPPED
    assert results[planted.stale_delete] is Result.ALREADY_DONE
    assert t.store.segment(planted.stale_copy).state == S.COPY_SEGMENT_STARTED
    assert planted.old_orphan in bucket_keys(t)


def test_an_orphan_whose_segment_is_recorded_since_planning_is_kept(planted: Planted) -> None:
    """The key carries a segment id: if a live row with that id appears, it is no orphan."""
    t = planted.t
    p = plan(t)
    (orphan,) = [f for f in p.findings if f.key == planted.old_orphan]
    assert orphan.segment_id is not None and orphan.actionable
    t.store.add_segment(
        StartedSegment(
            segment_id=orphan.segment_id,
            topic_id=t.store.topic("orders").topic_id,
            partition=0,
            start_offset=99_999,
            end_offset=100_000,
            max_timestamp_ms=planted.old_ms,
            segment_leader_epochs=[(0, 99_999)],
            segment_size_bytes=10,
            txn_index_empty=True,
        ),
        actor="late-copy",
        now_ms=wall_clock_ms(),
    )

    report = apply(t, p)

    (outcome,) = [o for o in report.outcomes if o.finding.key == planted.old_orphan]
    assert outcome.result is Result.SKIPPED
    assert f"segment {orphan.segment_id} now names it" in outcome.detail
    assert planted.old_orphan in bucket_keys(t)


def test_storage_failures_are_recorded_and_the_rest_continue(tmp_path: Path) -> None:
    planted = build_planted(tmp_path)
    t = planted.t
    failing = FailingDeletes(objects(t), fail_if="left-behind")

    report = apply(t, plan(t), store_objects=failing)

    (failure,) = report.failed
    assert failure.finding.key == planted.foreign_orphan
    assert "injected delete failure" in failure.detail
    assert planted.foreign_orphan in bucket_keys(t)
    assert not bucket_keys(t) & (planted.old_orphans - {planted.foreign_orphan})
    assert t.store.segment(planted.stale_copy).state == S.DELETE_SEGMENT_FINISHED
    assert failure in report.remaining


def test_an_object_without_a_modification_time_is_never_deleted(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    orders = t.store.topic("orders")
    key = partition_prefix("", "orders", orders.topic_id, 0) + "stray.log"
    put_old(t, key, b"x", wall_clock_ms() - 3 * DAY_MS)
    blind = NoModificationTimes(objects(t))

    p = plan(t, grace_ms=0, store_objects=blind)
    (orphan,) = p.findings
    assert (orphan.key, orphan.actionable, orphan.age_ms) == (key, False, None)
    assert "no modification time" in orphan.message
    apply(t, p, store_objects=blind)
    assert key in bucket_keys(t)


class NoModificationTimes:
    """A bucket whose stat reports no last-modified time, as some object stores may not."""

    def __init__(self, inner: ObjectStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def stat(self, key: str) -> ObjectInfo | None:
        found = self.inner.stat(key)
        if found is None:
            return None
        return replace(found, last_modified_ms=None)


def test_report_serialises(planted: Planted) -> None:
    t = planted.t
    p = plan(t)
    report: ReconcileReport = apply(t, p)
    summary = json.loads(json.dumps(reconcile_summary(p, report)))
    assert summary["applied"] is True
    assert summary["data_loss"] == 2
    assert summary["counts"]["orphan-object"] == 5
    assert summary["report"]["results"]["fixed"] == len(planted.old_orphans) + 2
    assert {f["result"] for f in summary["findings"]} == {"fixed", "kept"}


class RacingBucket:
    """A bucket where something else happens just as a partition's prefix is listed: the
    store has been read for that partition, the listing has not started yet."""

    def __init__(self, inner: ObjectStore, where: str, meanwhile: Callable[[], None]) -> None:
        self.inner = inner
        self.where = where
        self.meanwhile: Callable[[], None] | None = meanwhile

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def list(self, prefix: str = "") -> Iterator[str]:
        if prefix == self.where and self.meanwhile is not None:
            self.meanwhile, run = None, self.meanwhile
            run()
        return self.inner.list(prefix)


def test_a_segment_deleted_by_retention_meanwhile_is_not_data_loss(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    tier_all(t, wall_clock_ms() - DAY_MS)
    orders = t.store.topic("orders")
    row = t.store.segments(orders.topic_id, 0)[0]

    def retention() -> None:
        delete_remote_segment(t.store, t.rsm, orders, row, actor="retention", now_ms=1)

    where = partition_prefix("", "orders", orders.topic_id, 0)
    racing = RacingBucket(objects(t), where, retention)
    p = plan(t, store_objects=racing)
    assert racing.meanwhile is None, "retention ran while the partition was being listed"
    assert p.findings == []


def test_a_copy_started_meanwhile_is_not_an_orphan(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    tier_all(t, wall_clock_ms() - DAY_MS, skip=(("payments", 0),))
    payments = t.store.topic("payments")
    t.store.ensure_partition(payments.topic_id, 0, log_start_offset=0, local_log_start_offset=0)

    def copy_starts() -> None:
        plant_stale_copy(t, "payments", 0, wall_clock_ms() - 3 * DAY_MS)

    where = partition_prefix("", "payments", payments.topic_id, 0)
    racing = RacingBucket(objects(t), where, copy_starts)
    p = plan(t, store_objects=racing)
    assert racing.meanwhile is None, "the copy ran while the partition was being listed"
    assert by_kind(p, FindingKind.ORPHAN_OBJECT) == []


def test_progress_counts_every_finished_segment_and_its_bytes_once_checked(
    planted: Planted,
) -> None:
    heard = HeardProgress()

    p = plan(planted.t, progress=heard)

    assert p.data_loss, "the planted missing and wrong-sized objects are checked too"
    assert recorded_work(planted.t)[0] > 0
    assert heard.totals == recorded_work(planted.t) and heard.done == heard.totals
    partitions = [note for note in heard.notes if not note.startswith("keys outside")]
    assert sorted(partitions) == sorted(
        f"{log_.topic}-{log_.partition}" for log_ in planted.t.logs()
    )
