"""Copy and verify say how far they got: what they plan (segments and bytes), each segment as
it is done, and the file at work, so the CLI can draw a bar or write log lines."""

from __future__ import annotations

from pathlib import Path

from tests.support.progress import HeardProgress
from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.copy.plan import CopiedSegment
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.copy.verify import SegmentCheck, verify_partition


def copy_all(t: Tiered, heard: HeardProgress) -> list[tuple[str, CopiedSegment]]:
    copied = []
    for log_ in t.logs():
        report = copy_partition(log_, t.store, t.rsm, owner="test", progress=heard)
        copied += [(f"{log_.topic}-{log_.partition}", segment) for segment in report.copied]
    return copied


def test_a_dry_run_sizes_what_it_would_copy_and_reports_no_work(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    heard = HeardProgress()
    pending = 0
    for log_ in t.logs():
        report = copy_partition(log_, t.store, t.rsm, owner="test", dry_run=True, progress=heard)
        sizes = {s.base_offset: s.log_path.stat().st_size for s in log_.segments()}
        assert report.pending_bytes == sum(sizes[base] for base in report.pending)
        assert report.as_dict()["pending_bytes"] == report.pending_bytes
        pending += len(report.pending)
    assert pending > 0
    assert (heard.totals, heard.done, heard.notes) == ((0, 0), (0, 0), [])


def test_copy_reports_what_it_plans_then_each_upload(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    heard = HeardProgress()

    copied = copy_all(t, heard)

    assert copied
    expected = (len(copied), sum(segment.size_in_bytes for _, segment in copied))
    assert heard.totals == expected and heard.done == expected
    assert heard.notes == [f"{where} {s.start_offset:020d}.log" for where, s in copied]


def test_verify_reports_each_finished_segment_it_checks(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    copy_all(t, HeardProgress())
    heard = HeardProgress()

    checks: list[SegmentCheck] = []
    for log_ in t.logs():
        checks += verify_partition(log_, t.store.topic(log_.topic), t.store, t.rsm, progress=heard)

    assert checks and all(check.identical is not False for check in checks)
    expected = (len(checks), sum(check.size_in_bytes for check in checks))
    assert heard.totals == expected and heard.done == expected
    assert heard.notes == [f"{c.topic}-{c.partition} {c.start_offset:020d}.log" for c in checks]
