"""Reconcile under TIERFLOW_STORAGE_LAYOUT=kafka-local: LocalTieredStorage's keys.

A partition's objects lie in ``kafka-tiered-storage/<topic>-<partition>-<topic id>/``, its
partitions side by side. Reconcile, run from the settings, finds every recorded object there
(a clean bucket has no findings) and reads strays back to the topic and partition their
directory names; narrowed to a topic, it leaves another topic whose name starts the same alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reconcile.support import ACTOR, DAY_MS, HOUR_MS, bucket_keys, objects, put_old, tier_all
from tests.support.tiered import Tiered, build_tiered
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.reconcile import (
    FindingKind,
    ReconcileGrace,
    ReconcilePlan,
    ReconcileScope,
    apply_reconcile,
    plan_reconcile,
)
from tierflow.storage.keys import AIVEN_KEYS, KAFKA_LOCAL_KEYS, KeyLayout
from tierflow.tasks.reconcile import run_reconcile

ROOT = "kafka-tiered-storage/"


@pytest.fixture
def tiered(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path, storage_layout="kafka-local")
    tier_all(t, wall_clock_ms() - 3 * DAY_MS)
    return t


def reconciled(t: Tiered, *, apply: bool = False, topics: list[str] | None = None):
    return run_reconcile(
        t.settings, apply=apply, object_grace_ms=DAY_MS, actor=ACTOR, topics=topics
    )


def orphans(plan: ReconcilePlan) -> dict[str, tuple[str | None, int | None, str]]:
    return {
        f.key: (f.topic, f.partition, f.message.split(": ", 1)[1].split(";")[0])
        for f in plan.findings
        if f.kind is FindingKind.ORPHAN_OBJECT and f.key
    }


def test_every_object_lies_where_local_tiered_storage_keeps_it(tiered: Tiered) -> None:
    orders = tiered.store.topic("orders").topic_id
    keys = bucket_keys(tiered)
    assert keys and all(key.startswith(ROOT) for key in keys)
    assert any(key.startswith(f"{ROOT}orders-1-{orders}/") for key in keys)
    plan, _ = reconciled(tiered)
    assert plan.findings == [] and plan.partitions_checked == 3
    assert plan.objects_listed == len(keys)


def test_strays_are_read_back_to_their_partition(tiered: Tiered) -> None:
    orders = tiered.store.topic("orders").topic_id
    old = wall_clock_ms() - 3 * DAY_MS
    planted = {
        f"{ROOT}orders-0-{orders}/{99:020d}-{new_kafka_uuid()}.log": (
            "orders",
            0,
            "no segment names it",
        ),
        f"{ROOT}orders-7-{orders}/x.log": ("orders", 7, "partition 7 of orders is not registered"),
        f"{ROOT}orders-x-0-{orders}/x.log": (None, None, "outside every registered topic"),
        f"{ROOT}left-behind.bin": (None, None, "outside every registered topic"),
    }
    for key in planted:
        put_old(tiered, key, b"?", old)
    plan, _ = reconciled(tiered)
    assert orphans(plan) == planted
    _, report = reconciled(tiered, apply=True)
    assert report is not None and not report.failed
    assert not set(planted) & bucket_keys(tiered)


def test_a_topic_filter_leaves_topics_of_a_longer_name_alone(tiered: Tiered) -> None:
    orders = tiered.store.topic("orders").topic_id
    old = wall_clock_ms() - 3 * DAY_MS
    mine = put_old(tiered, f"{ROOT}orders-7-{orders}/x.log", b"?", old)
    put_old(tiered, f"{ROOT}orders-x-0-{orders}/x.log", b"?", old)  # listed under "orders-"
    plan, _ = reconciled(tiered, topics=["orders"])
    assert set(orphans(plan)) == {mine}


def test_read_with_aivens_keys_the_objects_look_like_strays_but_stay(tiered: Tiered) -> None:
    """The layout decides where reconcile looks: the wrong one calls every object a stray, and
    apply still deletes none, since a live segment's id names each."""
    before = bucket_keys(tiered)
    wrong = plan(tiered)
    assert {f.kind for f in wrong.findings} == {FindingKind.ORPHAN_OBJECT}
    assert {f.key for f in wrong.findings} == before
    report = apply_reconcile(
        wrong, tiered.store, tiered.rsm, objects(tiered), actor=ACTOR, now_ms=wall_clock_ms()
    )
    assert not report.failed and bucket_keys(tiered) == before
    assert plan(tiered, KAFKA_LOCAL_KEYS).findings == []


def plan(t: Tiered, keys: KeyLayout = AIVEN_KEYS) -> ReconcilePlan:
    return plan_reconcile(
        t.store,
        objects(t),
        ReconcileScope("", keys=keys),
        ReconcileGrace(wall_clock_ms(), DAY_MS, HOUR_MS),
    )
