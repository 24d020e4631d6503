"""A tiered bucket with one of each anomaly planted, the way real failures leave them.

A plain module (not a conftest) so the DAG and CLI tests can import it too. Object ages are
real file modification times (``os.utime``), so "now" is the wall clock here, and every planted
row is dated days back: the tests never depend on how today relates to the generator's clock.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tests.support.tiered import Tiered, build_tiered
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import rewrite_segment
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.reconcile import FindingKind as K
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata import SegmentTransition
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.storage.keys import normalize_prefix, partition_prefix
from tierflow.storage.object_store import ObjectStore

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
ACTOR = "test:reconcile"


@dataclass
class Planted:
    """The tiered setup and what was planted in it: keys, and segment ids."""

    t: Tiered
    old_ms: int  # when the planted things happened: three days ago
    old_orphan: str  # no row names it, old
    fresh_orphan: str  # no row names it, just written: must survive every apply
    tombstone_orphan: str  # named only by a DELETE_SEGMENT_FINISHED segment
    unregistered_orphan: str  # under a partition the store does not know
    foreign_orphan: str  # outside every topic prefix
    stale_copy: str  # COPY_SEGMENT_STARTED with its objects, no lease, old
    stale_delete: str  # DELETE_SEGMENT_STARTED with its objects still there, old
    missing_key: str  # one object of a FINISHED segment, deleted
    missing_segment: str
    truncated_key: str  # one object of a FINISHED segment, cut short
    truncated_segment: str

    @property
    def orphans(self) -> set[str]:
        return {
            self.old_orphan,
            self.fresh_orphan,
            self.tombstone_orphan,
            self.unregistered_orphan,
            self.foreign_orphan,
        }

    @property
    def old_orphans(self) -> set[str]:
        return self.orphans - {self.fresh_orphan}

    def expected_findings(self) -> set[tuple[str, str]]:
        """(kind, key or segment id) of exactly what was planted."""
        found = {(K.ORPHAN_OBJECT.value, key) for key in self.orphans}
        return found | {
            (K.STALE_COPY.value, self.stale_copy),
            (K.STALE_DELETE.value, self.stale_delete),
            (K.MISSING_OBJECT.value, self.missing_key),
            (K.SIZE_MISMATCH.value, self.truncated_key),
        }


def objects(t: Tiered) -> ObjectStore:
    return t.rsm.objects  # type: ignore[attr-defined]


def bucket_keys(t: Tiered) -> set[str]:
    """Every key in the bucket, the prefix and beyond."""
    return set(objects(t).list())


def keys_of(t: Tiered, segment_id: str) -> set[str]:
    return {key for key in bucket_keys(t) if segment_id in key}


def age(t: Tiered, key: str, ms: int) -> None:
    """Set an object's modification time to ``ms`` (since the epoch)."""
    path = t.bucket() / key
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def put_old(t: Tiered, key: str, data: bytes, when_ms: int) -> str:
    objects(t).put_bytes(key, data)
    age(t, key, when_ms)
    return key


def finished(t: Tiered, topic: str, partition: int) -> list[RemoteLogSegment]:
    topic_id = t.store.topic(topic).topic_id
    return t.store.segments(topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])


def recorded_work(t: Tiered) -> tuple[int, int]:
    """How many FINISHED segments a reconcile checks the objects of, and their recorded bytes:
    what its progress must report."""
    recorded = [
        found
        for topic in t.store.topics()
        for partition in t.store.partitions(topic.topic_id)
        for found in t.store.finished_objects(topic.topic_id, partition.partition).values()
    ]
    return len({found.segment_id for found in recorded}), sum(found.size for found in recorded)


def object_key(t: Tiered, segment_id: str, kind: str = "log") -> str:
    return next(o.key for o in t.store.segment_objects(segment_id) if o.kind == kind)


def tier_all(t: Tiered, when_ms: int, *, skip: tuple[tuple[str, int], ...] = ()) -> None:
    for log_ in t.logs():
        if (log_.topic, log_.partition) not in skip:
            copy_partition(log_, t.store, t.rsm, owner="copy", clock=lambda: when_ms)


def plant_stale_copy(t: Tiered, topic: str, partition: int, when_ms: int) -> str:
    """A copy killed after its upload: COPY_SEGMENT_STARTED, objects written, lease gone."""
    plan = prepare_copy(
        t.log(topic, partition),
        t.store,
        rsm=t.rsm,
        owner=CopyOwner("killed-copy"),
        clock=lambda: when_ms,
        max_segments=1,
    )
    job = plan.jobs[0]
    assert rewrite_segment(job, t.rsm).error is None
    t.store.release_lease(t.store.topic(topic).topic_id, partition, "killed-copy")
    for key in keys_of(t, job.segment_id):
        age(t, key, when_ms)
    return job.segment_id


def plant_stale_delete(t: Tiered, row: RemoteLogSegment, when_ms: int) -> str:
    """A delete killed right after DELETE_SEGMENT_STARTED: the objects are all still there."""
    t.store.transition_segment(
        SegmentTransition(row.segment_id, S.DELETE_SEGMENT_STARTED),
        actor="killed-retention",
        now_ms=when_ms,
    )
    return row.segment_id


def plant_tombstone_orphan(t: Tiered, row: RemoteLogSegment, when_ms: int) -> str:
    """A segment deleted properly, then one of its objects written again (a slow uploader)."""
    key = object_key(t, row.segment_id)
    data = objects(t).read_range(key)
    topic = t.store.topic_by_id(row.topic_id)
    delete_remote_segment(t.store, t.rsm, topic, row, actor="retention", now_ms=when_ms)
    return put_old(t, key, data, when_ms)


def build_planted(base: Path, layout: str = "plain", **overrides: object) -> Planted:
    """orders-0: stale delete, missing object, two stray objects; orders-1: truncated object,
    tombstone orphan; payments-0: stale copy; plus keys outside every partition."""
    t = build_tiered(base, layout=layout, **overrides)
    old = wall_clock_ms() - 3 * DAY_MS
    tier_all(t, old, skip=(("payments", 0),))
    stale_copy = plant_stale_copy(t, "payments", 0, old)

    first, second, _third = finished(t, "orders", 0)
    stale_delete = plant_stale_delete(t, first, old)
    missing_key = object_key(t, second.segment_id)
    objects(t).delete([missing_key])

    one, two = finished(t, "orders", 1)
    truncated_key = object_key(t, one.segment_id)
    with open(t.bucket() / truncated_key, "r+b") as handle:
        handle.truncate(10)
    age(t, truncated_key, old)
    tombstone_orphan = plant_tombstone_orphan(t, two, old)

    orders = t.store.topic("orders")
    prefix = t.settings.storage.prefix
    p0 = partition_prefix(prefix, "orders", orders.topic_id, 0)
    stray = f"{p0}{99_999:020d}-{new_kafka_uuid()}"
    top = normalize_prefix(prefix)
    return Planted(
        t=t,
        old_ms=old,
        old_orphan=put_old(t, f"{stray}.log", b"killed before its row", old),
        fresh_orphan=objects(t).put_bytes(f"{p0}{new_kafka_uuid()}.log", b"just now").key,
        tombstone_orphan=tombstone_orphan,
        unregistered_orphan=put_old(
            t, partition_prefix(prefix, "orders", orders.topic_id, 7) + "x.log", b"p7", old
        ),
        foreign_orphan=put_old(t, f"{top}strays/left-behind.bin", b"?", old),
        stale_copy=stale_copy,
        stale_delete=stale_delete,
        missing_key=missing_key,
        missing_segment=second.segment_id,
        truncated_key=truncated_key,
        truncated_segment=one.segment_id,
    )
