"""Planning: compare the bucket with the store, one registered partition at a time.

Planning only reads. Partitions whose removal is pending (DELETE_PARTITION_MARKED or STARTED)
belong to removal/remove.py: they are skipped, with one informational finding each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.lifecycle.reconcile.findings import Action, Finding, FindingKind, ReconcilePlan
from tierflow.lifecycle.reconcile.layout import (
    PartitionScan,
    TopicKey,
    TopicScope,
    key_place,
    partition_scans,
    stem,
    stem_in,
    topic_key,
    topic_scope,
)
from tierflow.lifecycle.reconcile.orphans import (
    add_orphan,
    leftover_place,
    orphan_place,
    unregistered_place,
)
from tierflow.lifecycle.reconcile.segments import LIVE_STATES, check_recorded, plan_stale_rows
from tierflow.lifecycle.reconcile.warehouse import WarehouseCatalog, plan_warehouse
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.models import Topic
from tierflow.metadata.segment_store import FinishedObject
from tierflow.metadata.states import RemoteLogSegmentState, RemotePartitionDeleteState
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.storage.keys import BucketKeys, KeyLayout
from tierflow.storage.local import leftover_keys
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.owned_prefixes import BucketLayout, Owner

PENDING_REMOVAL = (
    RemotePartitionDeleteState.DELETE_PARTITION_MARKED,
    RemotePartitionDeleteState.DELETE_PARTITION_STARTED,
)


@dataclass(frozen=True)
class ReconcileScope(BucketKeys):
    """What a reconcile judges: the bucket's objects where ``BucketKeys`` puts them, of only
    ``topics`` (Kafka names) when given, else of every topic."""

    topics: Iterable[str] | None = None


@dataclass(frozen=True)
class ReconcileGrace:
    """When the plan is made, and how old an orphan object or a stale row must then be to be
    fixed: younger ones may belong to a copy or delete still in flight, so they are reported
    only."""

    now_ms: int
    object_grace_ms: int
    row_grace_ms: int

    def __post_init__(self) -> None:
        if self.object_grace_ms < 0 or self.row_grace_ms < 0:
            raise ValueError("grace periods must not be negative")


def plan_reconcile(
    store: MetadataStore,
    objects: ObjectStore,
    scope: ReconcileScope,
    grace: ReconcileGrace,
    *,
    warehouse: WarehouseCatalog | None = None,
    progress: Progress = NO_PROGRESS,
    cluster_topic_ids: Collection[str] | None = None,
) -> ReconcilePlan:
    """Compare the bucket with the store and the Iceberg catalog; change nothing.

    Each owned prefix (storage/owned_prefixes.py) is judged by its own rule. Segments: each
    registered partition's prefix is listed once (one partition's expected keys in memory at a
    time); then the whole storage prefix for keys outside every registered partition. The
    Iceberg warehouse: by ``warehouse``, its catalog (warehouse.py; without one, nothing there is
    judged). Diskless WAL objects: by the diskless GC, against the coordinator.
    ``scope.topics`` narrows all of it to those topics. ``progress`` hears of the FINISHED
    segments' objects checked (segments and recorded bytes), a partition at a time.

    A bucket may be shared with brokers that tier themselves. Their objects are never tierflow's
    to delete: a topic the brokers copy (handed over, or followed) is reported only, and so are
    keys of an unregistered topic whose id ``cluster_topic_ids`` (the cluster's, when known)
    holds: a live topic, whose brokers may be tiering it.
    """
    topics, keys = scope.topics, scope.keys
    layout = BucketLayout(scope.prefix)
    plan = ReconcilePlan(
        layout.storage_prefix, grace.now_ms, grace.object_grace_ms, grace.row_grace_ms
    )
    chosen = _chosen_topics(store, topics)
    known: set[str] = set()
    for topic in chosen:
        for scan in partition_scans(store, topic, scope.prefix, keys):
            known.add(scan.where)
            progress.note(f"{scan.name}-{scan.number}")
            _plan_partition(plan, store, objects, scan, progress)
            plan.partitions_checked += 1
    every = [TopicScope(plan.prefix)]
    scopes = every if topics is None else [topic_scope(plan.prefix, t, keys) for t in chosen]
    registered = {topic_key(t): t for t in store.topics()}
    for listing in scopes:
        progress.note(f"keys outside the registered partitions, under {listing.where}")
        outside = _Outside(layout, keys, known, registered, frozenset(cluster_topic_ids or ()))
        _plan_unregistered(plan, objects, outside, listing)
    plan_warehouse(plan, objects, warehouse, None if topics is None else set(topics), progress)
    return plan


@dataclass(frozen=True)
class _Outside:
    """What judging keys outside the registered partitions needs: who owns a key, how keys
    name their partition, the registered partitions' prefixes, and the registered topics."""

    owners: BucketLayout
    keys: KeyLayout
    known: set[str]
    topics: dict[TopicKey, Topic]
    live_ids: frozenset[str]  # the cluster's topic ids: a live topic's keys are not orphans


def _plan_unregistered(
    plan: ReconcilePlan, objects: ObjectStore, outside: _Outside, scope: TopicScope
) -> None:
    """The segments' rule for keys under ``scope`` outside every registered partition: each an
    orphan, unless another owner's rule judges it."""
    for key in objects.list(scope.where):
        place = key_place(key, plan.prefix, outside.keys)
        if place.partition_dir in outside.known or not scope.holds(place):
            continue  # its partition's scan judged it, or it is another topic's
        if outside.owners.owner_of(key) is not Owner.SEGMENTS:
            continue  # a WAL object or a warehouse file: judged by their own rules
        plan.objects_listed += 1
        found = unregistered_place(place, outside.topics)
        if place.topic_id in outside.live_ids and found.topic_id is None:
            found = found._replace(why=f"{found.why}, but {_LIVE_TOPIC.format(place.topic)}")
            add_orphan(plan, objects, key, found, deletable=False)
        else:
            add_orphan(plan, objects, key, found)
    for key in leftover_keys(objects, scope.where):
        place = key_place(key, plan.prefix, outside.keys)
        if outside.owners.owner_of(key) is Owner.ICEBERG_WAREHOUSE or not scope.holds(place):
            continue  # the warehouse's leftovers are judged with the warehouse
        plan.objects_listed += 1
        add_orphan(plan, objects, key, leftover_place(place, outside.topics))


_LIVE_TOPIC = (
    "topic {} exists in the cluster: its brokers may be tiering it into this bucket "
    "(tierflow topics register and follow it, or delete by hand)"
)
BROKERS_DELETE = "the brokers copy this topic: tierflow reports, their RemoteLogManager deletes"


def _chosen_topics(store: MetadataStore, names: Iterable[str] | None) -> list[Topic]:
    """Every topic row (retired ones too: their data is still keyed), or those named."""
    topics = store.topics()
    if names is None:
        return topics
    wanted = set(names)
    chosen = [t for t in topics if kafka_topic_name(t.name) in wanted]
    missing = wanted - {kafka_topic_name(t.name) for t in chosen}
    if missing:
        raise UnknownTopicError(f"unknown topic(s): {', '.join(sorted(missing))}")
    return chosen


def _plan_partition(
    plan: ReconcilePlan,
    store: MetadataStore,
    objects: ObjectStore,
    scan: PartitionScan,
    progress: Progress,
) -> None:
    removal = store.partition_delete(scan.topic.topic_id, scan.number)
    if removal is not None and removal.delete_state in PENDING_REMOVAL:
        _skip_partition(plan, objects, scan, removal.state)
        return
    first = len(plan.findings)
    live = store.segment_summaries(scan.topic.topic_id, scan.number, states=LIVE_STATES)
    named = {stem(row.start_offset, row.segment_id) for row in live}
    finished_state = RemoteLogSegmentState.COPY_SEGMENT_FINISHED.value
    finished = {r.segment_id: r for r in live if r.state == finished_state}
    recorded = store.finished_objects(scan.topic.topic_id, scan.number)
    checked = _Checked(progress, recorded)
    seen: set[str] = set()
    for key in objects.list(scan.where):
        plan.objects_listed += 1
        if key in recorded:
            seen.add(key)
            check_recorded(plan, store, objects, scan, key, recorded[key], finished)
            checked.done(recorded[key])
        elif stem_in(key, scan.where) not in named:
            place = orphan_place(store, scan, key)
            if place is not None:
                add_orphan(plan, objects, key, place)
    for key in sorted(recorded.keys() - seen):  # not listed: stat says whether it is gone
        check_recorded(plan, store, objects, scan, key, recorded[key], finished)
        checked.done(recorded[key])
    plan_stale_rows(plan, store, scan)
    if not scan.topic.copied_by_tierflow:
        _report_only(plan, first, BROKERS_DELETE)


def _report_only(plan: ReconcilePlan, first: int, why: str) -> None:
    """The findings from ``first`` on become reports: apply leaves them alone."""
    for n in range(first, len(plan.findings)):
        found = plan.findings[n]
        if found.action is not Action.REPORT_ONLY:
            message = f"{found.message}; reported only: {why}"
            plan.findings[n] = replace(
                found, action=Action.REPORT_ONLY, actionable=False, message=message
            )


class _Checked:
    """Tells ``progress`` of a partition's FINISHED objects as they are checked: their bytes
    one object at a time, a segment once all its objects are."""

    def __init__(self, progress: Progress, recorded: Mapping[str, FinishedObject]):
        self.progress = progress
        self.left = Counter(found.segment_id for found in recorded.values())
        progress.add_total(len(self.left), sum(found.size for found in recorded.values()))

    def done(self, found: FinishedObject) -> None:
        self.left[found.segment_id] -= 1
        self.progress.advance(int(self.left[found.segment_id] == 0), found.size)


def _skip_partition(
    plan: ReconcilePlan, objects: ObjectStore, scan: PartitionScan, state: str
) -> None:
    count = sum(1 for _ in objects.list(scan.where))
    plan.findings.append(
        Finding(
            kind=FindingKind.PARTITION_BEING_REMOVED,
            action=Action.REPORT_ONLY,
            actionable=False,
            message=f"{scan.name}-{scan.number} is {state}: the partition remover owns its "
            f"{count} object(s) and its rows; not checked",
            **scan.finding_names,
        )
    )
