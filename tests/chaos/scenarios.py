"""The lifecycle operations the harness kills: the state each starts from, and its command.

Each scenario prepares a generated broker log dir, store and bucket (tests.support.tiered) into
the state its operation expects, then names the subprocess that runs the operation with the
settings in its environment. The commands are the real entry points where they exist (the
``tierflow copy`` CLI, the crash workers of the per-operation tests), and tests.chaos.worker
for the DAG task bodies that have none.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tests.reconcile.support import (
    DAY_MS,
    finished,
    objects,
    plant_stale_copy,
    plant_stale_delete,
    plant_tombstone_orphan,
    put_old,
    tier_all,
)
from tests.retention.support import HOUR_MS, configure, copy_all
from tests.support.tiered import NOW_MS, Tiered
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.disablement import Policy, request_disable
from tierflow.lifecycle.removal.remove import mark_topic_deleted
from tierflow.storage.keys import normalize_prefix, partition_prefix

REMOVAL_NOW_MS = NOW_MS + HOUR_MS


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str  # one line for the table
    command: tuple[str, ...]  # the subprocess, after ``python``
    prepare: Callable[[Tiered], None]
    settings: Mapping[str, object] = field(default_factory=dict)
    slow: bool = False  # starts Spark: only in the full harness
    # Whether the operation reads or writes the bucket at all: the storage fault plans are run
    # only for those that do (local retention trusts the store's verified FINISHED rows).
    uses_storage: bool = True


def _nothing(_t: Tiered) -> None:
    """Copy starts from the bare log dir."""


def _expiring_remotely(t: Tiered) -> None:
    """Everything tiered; retention.ms expires the oldest remote segments (and moves LSO)."""
    copy_all(t)
    for topic in ("orders", "payments"):
        configure(t, topic, retention_ms=30 * HOUR_MS)


def _expiring_locally(t: Tiered) -> None:
    """Everything tiered; local.retention.ms expires the oldest local segments."""
    copy_all(t)
    for topic in ("orders", "payments"):
        configure(t, topic, local_retention_ms=30 * HOUR_MS)


def _tiered_with_a_stale_copy(t: Tiered) -> None:
    """orders-0 and payments tiered; orders-1 left by a killed copy (STARTED, objects up)."""
    for log_ in t.logs():
        if (log_.topic, log_.partition) != ("orders", 1):
            copy_partition(log_, t.store, t.rsm, owner="copy", clock=lambda: NOW_MS)
    plant_stale_copy(t, "orders", 1, NOW_MS)


def _disabling(policy: Policy) -> Callable[[Tiered], None]:
    def prepare(t: Tiered) -> None:
        _tiered_with_a_stale_copy(t)
        request_disable(t.store, "orders", policy=policy, actor="chaos", now_ms=NOW_MS)

    prepare.__doc__ = f"orders DISABLING with policy {policy}, one copy abandoned mid-way."
    return prepare


def _deleted_topic(t: Tiered) -> None:
    """orders deleted in Kafka and marked; a killed copy's object nobody recorded under p0."""
    _tiered_with_a_stale_copy(t)
    orders = t.store.topic("orders")
    stray = partition_prefix(t.settings.storage.prefix, "orders", orders.topic_id, 0)
    objects(t).put_bytes(f"{stray}{99_999:020d}-{new_kafka_uuid()}.log", b"no row")
    mark_topic_deleted(t.store, "orders", actor="chaos", now_ms=REMOVAL_NOW_MS)


def _anomalies(t: Tiered) -> None:
    """What real failures leave, three days old: a stale copy and delete, orphans of each kind."""
    old = wall_clock_ms() - 3 * DAY_MS
    tier_all(t, old, skip=(("payments", 0),))
    plant_stale_copy(t, "payments", 0, old)
    first = finished(t, "orders", 0)[0]
    plant_stale_delete(t, first, old)
    plant_tombstone_orphan(t, finished(t, "orders", 1)[1], old)
    orders = t.store.topic("orders")
    prefix = t.settings.storage.prefix
    p0 = partition_prefix(prefix, "orders", orders.topic_id, 0)
    put_old(t, f"{p0}{99_999:020d}-{new_kafka_uuid()}.log", b"killed before its row", old)
    p7 = partition_prefix(prefix, "orders", orders.topic_id, 7)
    put_old(t, f"{p7}x.log", b"unregistered partition", old)
    put_old(t, f"{normalize_prefix(prefix)}strays/left-behind.bin", b"?", old)


WORKER = ("-m", "tests.chaos.worker")

SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "copy",
        "tierflow copy, rewrite in the worker",
        ("-m", "tierflow.cli", "copy", "--owner", "chaos:copy"),
        _nothing,
    ),
    Scenario(
        "spark-copy",
        "segment_copy DAG steps, rewrite by spark-submit",
        (*WORKER, "spark-copy"),
        _nothing,
        settings={"spark_threshold_bytes": 1},
        slow=True,
    ),
    Scenario(
        "remote-retention",
        "retention_expiry, retention.ms=30h",
        (*WORKER, "retention", str(NOW_MS)),
        _expiring_remotely,
    ),
    Scenario(
        "local-retention",
        "retention_expiry, local.retention.ms=30h, files deleted",
        (*WORKER, "retention", str(NOW_MS)),
        _expiring_locally,
        settings={"delete_local_segments": True},
        uses_storage=False,
    ),
    Scenario(
        "disable-retain",
        "complete_disable, policy retain",
        ("-m", "tests.disablement.crash_worker", "orders", str(NOW_MS)),
        _disabling("retain"),
    ),
    Scenario(
        "disable-delete",
        "complete_disable, policy delete",
        ("-m", "tests.disablement.crash_worker", "orders", str(NOW_MS)),
        _disabling("delete"),
    ),
    Scenario(
        "partition-removal",
        "remove_marked_partitions of a deleted topic",
        ("-m", "tests.partition_removal.crash_worker", str(REMOVAL_NOW_MS)),
        _deleted_topic,
    ),
    Scenario(
        "reconcile",
        "remote_reconcile apply, default graces",
        (*WORKER, "reconcile"),
        _anomalies,
    ),
)


def scenario(name: str) -> Scenario:
    for found in SCENARIOS:
        if found.name == name:
            return found
    raise KeyError(f"no chaos scenario {name!r}; known: {', '.join(s.name for s in SCENARIOS)}")
