"""The remote_reconcile DAG run by Airflow itself: a dry run that turns red on data loss and
changes nothing, and an apply with grace 0 that deletes the orphans."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.reconcile.support import (
    DAY_MS,
    bucket_keys,
    build_planted,
    objects,
    plant_stale_copy,
    put_old,
    tier_all,
)
from tests.support.tiered import Tiered, build_tiered
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.storage.keys import partition_prefix

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def run(t: Tiered, name: str, **conf: object) -> str:
    """The run's final state; a failed run is an answer here, not an error."""
    return run_dag_in_subprocess(
        "remote_reconcile",
        project=PROJECT,
        airflow_home=t.settings.data_dir / "airflow",
        extra_env=t.settings.as_env(),
        log_file=t.settings.data_dir / f"{name}.log",
        run_conf=conf,
    )


def test_dry_run_changes_nothing_logs_the_findings_and_is_red_on_data_loss(tmp_path: Path):
    planted = build_planted(tmp_path)
    t = planted.t
    events, keys = len(t.store.events()), bucket_keys(t)

    assert run(t, "dry") == "failed"

    assert (len(t.store.events()), bucket_keys(t)) == (events, keys)
    log_text = (tmp_path / "dry.log").read_text(errors="replace")
    for kind in ("orphan-object", "stale-copy", "stale-delete", "missing-object", "size-mismatch"):
        assert f"reconcile {kind}" in log_text
    assert planted.missing_key in log_text and planted.old_orphan in log_text
    assert "reconcile (dry run)" in log_text
    assert "AirflowFailException" in log_text  # red at once, with no retries to wait out


def test_apply_with_grace_zero_deletes_the_orphans(tmp_path: Path):
    t = build_tiered(tmp_path)
    old = wall_clock_ms() - 3 * DAY_MS
    tier_all(t, old, skip=(("payments", 0),))
    stale_copy = plant_stale_copy(t, "payments", 0, old)
    orders = t.store.topic("orders")
    p1 = partition_prefix("", "orders", orders.topic_id, 1)
    orphans = {
        put_old(t, f"{p1}{12_345:020d}-{new_kafka_uuid()}.log", b"old", old),
        objects(t).put_bytes(f"{p1}fresh.log", b"just now").key,
        put_old(t, "strays/left-behind.bin", b"?", old),
    }
    live = bucket_keys(t) - orphans - {k for k in bucket_keys(t) if stale_copy in k}

    assert run(t, "apply", apply=True, grace_hours=0) == "success"

    assert bucket_keys(t) == live
    assert t.store.segment(stale_copy).state == S.DELETE_SEGMENT_FINISHED
    log_text = (tmp_path / "apply.log").read_text(errors="replace")
    assert "reconcile (applied)" in log_text
    assert "no missing or wrong-sized objects" in log_text
