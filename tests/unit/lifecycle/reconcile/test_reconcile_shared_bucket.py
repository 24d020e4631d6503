"""Reconcile in a bucket shared with brokers that tier themselves: nothing of theirs goes.

A topic the brokers copy (handed over, or followed) is checked like any other, but every
finding on it is reported only: its orphans, its stale rows (a broker's leaked
COPY_SEGMENT_STARTED) are the brokers' to delete. Keys of a topic tierflow does not know, whose
id the cluster has, may be a live broker's tiering: reported, never deleted. Without the
cluster's ids they are orphans as before.
"""

from __future__ import annotations

from pathlib import Path

from tests.reconcile.support import DAY_MS, HOUR_MS, build_planted, objects, put_old
from tests.support.tiered import Tiered
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.reconcile import (
    Action,
    FindingKind,
    ReconcileGrace,
    ReconcilePlan,
    ReconcileScope,
    apply_reconcile,
    plan_reconcile,
)
from tierflow.storage.keys import partition_prefix


def plan(t: Tiered, **kw: object) -> ReconcilePlan:
    return plan_reconcile(
        t.store,
        objects(t),
        ReconcileScope(t.settings.storage.prefix),
        ReconcileGrace(wall_clock_ms(), DAY_MS, HOUR_MS),
        **kw,  # type: ignore[arg-type]
    )


def test_a_broker_copied_topic_is_reported_never_fixed(tmp_path: Path) -> None:
    planted = build_planted(tmp_path)
    t = planted.t
    before = plan(t)
    assert any(f.actionable and f.topic == "payments" for f in before.findings)
    payments = t.store.topic("payments").topic_id
    t.store.set_copier(payments, "broker", actor="test", now_ms=wall_clock_ms())
    after = plan(t)
    theirs = [f for f in after.findings if f.topic == "payments"]
    assert {f.kind for f in theirs} == {f.kind for f in before.findings if f.topic == "payments"}
    assert all(f.action is Action.REPORT_ONLY and not f.actionable for f in theirs)
    assert all("the brokers copy this topic" in f.message for f in theirs)
    report = apply_reconcile(after, t.store, t.rsm, objects(t), actor="test", now_ms=1)
    assert t.store.segment(planted.stale_copy).state == "COPY_SEGMENT_STARTED"
    assert not [o for o in report.fixed if o.finding.topic == "payments"]


def test_keys_of_a_live_topic_tierflow_does_not_know_are_never_orphans(tmp_path: Path) -> None:
    planted = build_planted(tmp_path)
    t = planted.t
    theirs = new_kafka_uuid()
    key = partition_prefix(t.settings.storage.prefix, "brokers-own", theirs, 0) + "x.log"
    put_old(t, key, b"a broker's", wall_clock_ms() - 3 * DAY_MS)
    unknown = {f.key: f for f in plan(t).findings if f.kind is FindingKind.ORPHAN_OBJECT}
    assert unknown[key].actionable  # no cluster to ask: an orphan, as before
    found = {
        f.key: f
        for f in plan(t, cluster_topic_ids={theirs}).findings
        if f.kind is FindingKind.ORPHAN_OBJECT
    }
    assert found[key].action is Action.REPORT_ONLY and not found[key].actionable
    assert "topic brokers-own exists in the cluster" in found[key].message
    assert found[planted.foreign_orphan].actionable  # a key no topic id names is still one
