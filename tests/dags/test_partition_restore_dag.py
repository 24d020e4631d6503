"""The partition_restore DAG run by Airflow itself (dag.test) from its Param form: the dry run
(the default) writes nothing and says what it would; switched off, it restores the topic's
partitions byte for byte, records each restore with the task instance, and a rerun changes
nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.restore.test_restore_partition import assert_restored_as_written
from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def test_a_restore_from_the_form_dry_run_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = build_tiered(tmp_path / "data", layout="chunked-encrypted")
    use_settings(monkeypatch, t.settings)
    assert main(["copy", "--owner", "test"]) == 0
    target = tmp_path / "restored"
    os.environ.pop("TIERFLOW_CRASH_AT", None)

    def run(name: str, **conf: object) -> str:
        return run_dag_in_subprocess(
            "partition_restore",
            project=PROJECT,
            airflow_home=tmp_path / "airflow",
            extra_env=t.settings.as_env(),
            log_file=tmp_path / f"{name}.log",
            run_conf={"topic": "orders", "to": str(target), **conf},
        )

    assert run("dry") == "success"
    assert not target.exists(), "a dry run writes nothing"
    dry_log = (tmp_path / "dry.log").read_text()
    assert "dry run: would restore orders-0: 3 segments" in dry_log
    assert run("real", dry_run=False) == "success"
    for partition in (0, 1):
        assert_restored_as_written(t.store, t.log("orders", partition), target)
    topic_id = t.store.topic("orders").topic_id
    events = t.store.events(topic_id=topic_id, entity="restore")
    assert [e.partition for e in events] == [0, 1]
    assert all("partition_restore" in e.actor for e in events), [e.actor for e in events]
    before = sorted((p.name, p.stat().st_mtime_ns) for p in target.rglob("*.log"))
    assert run("again", dry_run=False) == "success"
    assert sorted((p.name, p.stat().st_mtime_ns) for p in target.rglob("*.log")) == before
