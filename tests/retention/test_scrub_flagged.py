"""Local retention keeps the last good local copy of a segment the scrubber flagged: a remote
copy with an open finding protects nothing. Once the repair has copied it again, the local
segment goes as any other."""

from __future__ import annotations

import itertools

from tests.retention.support import HOUR_MS, configure, rows
from tests.support.scrub_finding import flip_log_object
from tests.support.tiered import NOW_MS, Tiered
from tierflow.lifecycle.retention.local import plan_local_retention
from tierflow.lifecycle.scrub.repair import RepairAction, RepairRun, repair_findings
from tierflow.lifecycle.scrub.run import ScrubRun, scrub
from tierflow.metadata.states import RemoteLogSegmentState as S


def deletions(t: Tiered) -> tuple[list[tuple[int, tuple[str, ...]]], list[str]]:
    plan = plan_local_retention(t.log("orders", 0), t.store, t.store.topic("orders"), now_ms=NOW_MS)
    return [(d.base_offset, d.remote_segment_ids) for d in plan.deletions], plan.blocked


def test_a_flagged_segment_keeps_its_local_copy_until_repaired(tiered: Tiered) -> None:
    configure(tiered, "orders", local_retention_ms=30 * HOUR_MS)
    first, second = rows(tiered, "orders", 0, S.COPY_SEGMENT_FINISHED)[:2]
    assert deletions(tiered)[0] == [(0, (first.segment_id,)), (589, (second.segment_id,))]

    flip_log_object(tiered, first.segment_id)
    ticks = itertools.count(1_000)
    clock = lambda: next(ticks)  # noqa: E731
    found = scrub(tiered.store, tiered.rsm, ScrubRun(1 << 40, actor="test", clock_ms=clock))
    assert [s.segment_id for s in found.findings] == [first.segment_id]
    planned, blocked = deletions(tiered)
    assert planned == [], "the oldest segment may not go, nor anything after it"
    assert (
        len(blocked) == 1 and f"segment {first.segment_id}, has an open scrub finding" in blocked[0]
    )

    logs = {(log_.topic, log_.partition): log_ for log_ in tiered.logs()}
    run = RepairRun(actor="test", clock_ms=clock, local_log=lambda *tp: logs.get(tp), dry_run=False)
    (repaired,) = repair_findings(tiered.store, tiered.rsm, run)
    assert repaired.action is RepairAction.RECOPIED
    assert deletions(tiered)[0] == [(0, (repaired.replacement,)), (589, (second.segment_id,))]
