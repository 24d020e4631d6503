"""The page's "next retention run" is the retention_expiry DAG's own dry run."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.operator_view.conftest import ViewData
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.retention_preview import (
    RETENTION_SCHEDULE,
    next_retention_run_ms,
    preview_retention,
)
from tierflow.operator_view.snapshot import build_snapshot
from tierflow.tasks.retention import expire_partition, list_retention_targets, summarize

DAG_FILE = Path(__file__).resolve().parents[3] / "dags" / "retention_expiry.py"
DAY_MS = 86_400_000


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_the_schedule_is_the_dags() -> None:
    assert re.search(r'schedule="([^"]+)"', DAG_FILE.read_text()).group(1) == RETENTION_SCHEDULE


@pytest.mark.parametrize(
    ("now", "run"),
    [
        ("2026-11-21T01:59:59.999", "2026-11-21T02:00:00"),
        ("2026-11-21T02:00:00", "2026-11-22T02:00:00"),  # that run is due now: the next one
        ("2026-11-21T23:30:00", "2026-11-22T02:00:00"),
        ("2026-12-31T12:00:00", "2027-01-01T02:00:00"),
    ],
)
def test_the_next_run_is_the_next_0200_utc(now: str, run: str) -> None:
    assert next_retention_run_ms(ms(now)) == ms(run)


@pytest.mark.parametrize("days_later", [0, 30])
def test_the_preview_is_what_the_dag_would_report(view_data: ViewData, days_later: int) -> None:
    d = view_data
    as_of = next_retention_run_ms(d.now_ms) + days_later * DAY_MS
    preview = preview_retention(
        d.t.store,
        {(p.topic, p.partition): p for p in d.t.logs()},
        as_of_ms=as_of,
        copy_grace_ms=d.t.settings.stale_copy_grace_s * 1000,
        delete_local_files=False,
    )
    results = [
        expire_partition(target, now_ms=as_of, dry_run=True, settings=d.t.settings)
        for target in list_retention_targets(d.t.settings)
    ]
    report = summarize(results, dry_run=True)["topics"]
    assert {t.topic: _totals(t) for t in preview.topics} == report
    planned = {
        (r["topic"], r["partition"]): [x["segment_id"] for x in r["remote"]["deletions"]]
        for r in results
    }
    shown: dict[tuple[str, int], list[str]] = {key: [] for key in planned}
    for deletion in preview.deletions:
        if deletion.tier == "remote":
            shown[(deletion.topic, deletion.partition)].append(deletion.segment)
    assert shown == planned
    assert any(planned.values()), "the scenario gives retention something to do"
    if days_later:
        reasons = {x.reason for x in preview.deletions}
        assert {"retention.ms", "retry-delete", "stale-copy"} <= reasons
        assert any(x.tier == "local" for x in preview.deletions)


def test_the_snapshot_plans_as_of_the_next_run(view_data: ViewData) -> None:
    d = view_data
    reasons = set()
    for topic in ("orders", "payments"):
        options = ViewOptions(topic=topic)
        snap = build_snapshot(d.t.store, d.t.settings, now_ms=d.now_ms, options=options)
        assert snap.retention.as_of_ms == next_retention_run_ms(d.now_ms)
        assert {p.topic for p in snap.retention.partitions} == {topic}
        reasons |= {(x.segment, x.reason) for x in snap.retention.deletions}
    assert (d.failed_delete, "retry-delete") in reasons  # retried first, wherever it lies
    assert {(s, "stale-copy") for s in d.stuck_copies} <= reasons  # lease expired, past grace


def test_without_a_topic_nothing_is_planned(view_data: ViewData) -> None:
    """The plan costs the run's queries per partition: only listed partitions are planned."""
    d = view_data
    snap = build_snapshot(d.t.store, d.t.settings, now_ms=d.now_ms, options=ViewOptions())
    assert snap.retention.as_of_ms == next_retention_run_ms(d.now_ms)
    assert snap.retention.partitions == [] and snap.retention.deletions == []


def _totals(t) -> dict[str, int]:
    return {
        "remote_segments": t.remote_segments,
        "remote_bytes": t.remote_bytes,
        "local_segments": t.local_segments,
        "local_bytes": t.local_bytes,
    }
