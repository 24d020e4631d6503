"""The retention_expiry DAG run by Airflow itself: a dry run (asked for, or a manual trigger's
default), and a backfill over three nights."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.tasks.attribution import task_instance_of

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
DAY_MS = 24 * 3600 * 1000


def tiered_with_one_day_retention(base: Path) -> Tiered:
    t = build_tiered(base)
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    for name in {log_.topic for log_ in t.logs()}:
        topic = t.store.topic(name)
        t.store.register_topic(
            name, topic.topic_id, actor="test", now_ms=NOW_MS, retention_ms=DAY_MS
        )
    return t


def run(t: Tiered, name: str, **kwargs) -> str:
    return run_dag_in_subprocess(
        "retention_expiry",
        project=PROJECT,
        airflow_home=t.settings.data_dir / "airflow",
        extra_env=t.settings.as_env(),
        log_file=t.settings.data_dir / f"{name}.log",
        **kwargs,
    )


def deleted(t: Tiered) -> set[str]:
    return {
        row.segment_id
        for log_ in t.logs()
        for row in t.store.segments(t.store.topic(log_.topic).topic_id, log_.partition)
        if row.state == S.DELETE_SEGMENT_FINISHED
    }


def expired_as_of(t: Tiered, now_ms: int) -> set[str]:
    """Independently of the planner: per partition, the oldest FINISHED segments whose max
    timestamp is at or before now - retention.ms (Kafka stops at the first one that is not)."""
    expected = set()
    for log_ in t.logs():
        topic = t.store.topic(log_.topic)
        rows = t.store.segments(topic.topic_id, log_.partition)
        for row in sorted(rows, key=lambda r: r.start_offset):
            if row.max_timestamp_ms > now_ms - topic.retention_ms:
                break
            expected.add(row.segment_id)
    return expected


def test_dry_run_changes_nothing(tmp_path: Path):
    t = tiered_with_one_day_retention(tmp_path)
    assert expired_as_of(t, NOW_MS), "the data must hold expired segments for this test"
    events = len(t.store.events())
    objects = sorted(t.rsm.objects.list())
    state = run(t, "dry", run_conf={"dry_run": True}, logical_date=_ms_to_dt(NOW_MS))
    assert state == "success"
    assert len(t.store.events()) == events
    assert sorted(t.rsm.objects.list()) == objects
    log_text = (tmp_path / "dry.log").read_text()
    assert "would delete" in log_text


def test_a_manual_trigger_with_the_default_params_changes_nothing(tmp_path: Path):
    """dag.test() makes a manual run, as the UI's Trigger button does: dry_run is on."""
    t = tiered_with_one_day_retention(tmp_path)
    assert expired_as_of(t, NOW_MS), "the data must hold expired segments for this test"
    events = len(t.store.events())
    objects = sorted(t.rsm.objects.list())
    assert run(t, "default", logical_date=_ms_to_dt(NOW_MS)) == "success"
    assert len(t.store.events()) == events
    assert sorted(t.rsm.objects.list()) == objects
    assert "would delete" in (tmp_path / "default.log").read_text()


def test_backfill_deletes_each_night_what_had_expired_by_then(tmp_path: Path):
    t = tiered_with_one_day_retention(tmp_path)
    first_night = _ms_to_dt(NOW_MS).replace(hour=2, minute=0, second=0, microsecond=0)
    nights = [first_night + timedelta(days=n) for n in range(3)]
    seen: list[set[str]] = []
    for night in nights:
        now_ms = int(night.timestamp() * 1000)
        expected = expired_as_of(t, now_ms) | (seen[-1] if seen else set())
        # dag.test() runs are manual, hence dry by default: ask for the real thing.
        name = f"night-{night.date()}"
        assert run(t, name, run_conf={"dry_run": False}, logical_date=night) == "success"
        assert deleted(t) == expected, night
        seen.append(expected)
    assert len(seen[0]) < len(seen[-1]), "later nights delete more"
    live = {key for key in t.rsm.objects.list()}
    assert not any(segment_id in key for key in live for segment_id in seen[-1])
    # Each delete names the task instance that made it, so the page can link to it.
    deletes = [e for e in t.store.events() if e.to_state == S.DELETE_SEGMENT_STARTED]
    tis = {task_instance_of(e.actor) for e in deletes}
    assert deletes and None not in tis
    assert {(ti.dag_id, ti.task_id) for ti in tis} == {("retention_expiry", "expire")}


def _ms_to_dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
