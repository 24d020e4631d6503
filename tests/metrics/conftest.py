"""A generated broker log dir, tiered part of the way, so every partition has a lag:

* orders-0: one segment copied of the three eligible (prepare_copy with max_segments=1);
* orders-1: copied as far as its high watermark allows (it lags inside its third segment);
* payments-0: a copy in progress, its two segments still COPY_SEGMENT_STARTED.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import rewrite_segment
from tierflow.lifecycle.copy.steps import copy_partition


def _now() -> int:
    return NOW_MS


@pytest.fixture
def partly(tmp_path: Path) -> Tiered:
    t = build_tiered(tmp_path)
    plan = prepare_copy(
        t.log("orders", 0), t.store, rsm=t.rsm, owner=CopyOwner("test"), max_segments=1, clock=_now
    )
    results = {job.segment_id: rewrite_segment(job, t.rsm) for job in plan.jobs}
    finalize_copy(plan, results, t.store, t.rsm, owner="test", clock=_now)
    copy_partition(t.log("orders", 1), t.store, t.rsm, owner="test", clock=_now)
    prepare_copy(
        t.log("payments", 0), t.store, rsm=t.rsm, owner=CopyOwner("in-progress"), clock=_now
    )
    return t
