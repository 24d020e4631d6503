"""A store with something in every section of the page, each event at its own time:

* orders-0: copied; its first segment's delete failed (DELETE_SEGMENT_STARTED by a
  retention_expiry task instance) and its second was deleted (a DELETE_SEGMENT_FINISHED row);
* orders-1: one segment copied of those eligible;
* payments-0: a copy whose task died after prepare (COPY_SEGMENT_STARTED, started by a
  segment_copy task instance, its lease expired).

The snapshot is taken two hours after the last event.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import rewrite_segment
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata import SegmentTransition
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.tasks.attribution import TaskInstanceRef, with_task_instance
from tierflow.tasks.segment_copy import copy_owner

COPY_TI = TaskInstanceRef("segment_copy", "manual__2026-09-21T00:00:00+00:00", "prepare", 2, 1)
RETENTION_TI = TaskInstanceRef(
    "retention_expiry", "scheduled__2026-09-20T02:00:00+00:00", "expire", 0, 3
)
TWO_HOURS_MS = 2 * 3_600_000


class Ticker:
    """A clock that moves one second at every reading: every event gets its own time."""

    def __init__(self, start_ms: int) -> None:
        self.now_ms = start_ms

    def __call__(self) -> int:
        self.now_ms += 1000
        return self.now_ms


@dataclass
class ViewData:
    t: Tiered
    clock: Ticker
    now_ms: int  # when the snapshot is taken
    failed_delete: str  # segment ids
    deleted: str
    stuck_copies: list[str]


@pytest.fixture
def view_data(tmp_path: Path) -> ViewData:
    t = build_tiered(tmp_path)
    clock = Ticker(NOW_MS)
    copy_partition(t.log("orders", 0), t.store, t.rsm, owner="test", clock=clock)
    plan = prepare_copy(
        t.log("orders", 1), t.store, rsm=t.rsm, owner=CopyOwner("test"), max_segments=1, clock=clock
    )
    results = {job.segment_id: rewrite_segment(job, t.rsm) for job in plan.jobs}
    finalize_copy(plan, results, t.store, t.rsm, owner="test", clock=clock)

    orders = t.store.topic("orders")
    first, second, *_ = t.store.segments(orders.topic_id, 0)
    retention_actor = with_task_instance("airflow:retention_expiry", RETENTION_TI)
    t.store.transition_segment(
        SegmentTransition(first.segment_id, S.DELETE_SEGMENT_STARTED),
        actor=retention_actor,
        now_ms=clock(),
    )
    delete_remote_segment(t.store, t.rsm, orders, second, actor=retention_actor, now_ms=clock())

    target = {"topic": "payments", "partition": 0}
    stuck = prepare_copy(
        t.log("payments", 0),
        t.store,
        rsm=t.rsm,
        owner=CopyOwner(copy_owner(target), lease_ttl_s=60),
        actor=with_task_instance(copy_owner(target), COPY_TI),
        clock=clock,
    )
    return ViewData(
        t,
        clock,
        clock.now_ms + TWO_HOURS_MS,
        first.segment_id,
        second.segment_id,
        [job.segment_id for job in stuck.jobs],
    )
