"""``tierflow restore`` above the Spark threshold (or with ``--spark``) writes its segments as a
Spark job, one task per segment, outside any Airflow. A Spark task killed mid-segment fails the
restore with one line and leaves no segment half in place; the rerun writes what is missing and
ends as an uninterrupted restore."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.restored import assert_restored_as_written
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.faults import ENV_CRASH_AT

pytestmark = [pytest.mark.slow]


def restore(target: Path, *extra: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "tierflow.cli", "restore", "orders", "--to", str(target)]
    return subprocess.run([*command, *extra], env=env, capture_output=True, text=True, timeout=600)


def test_a_restore_on_spark_killed_in_a_task_then_rerun(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = build_tiered(tmp_path / "tiered", layout="chunked-encrypted")
    for name, value in t.settings.as_env().items():
        monkeypatch.setenv(name, value)
    assert main(["copy", "--owner", "test"]) == 0
    env = {**os.environ, "AIRFLOW_HOME": str(tmp_path / "airflow")}
    env.pop("AIRFLOW_CONN_SPARK_DEFAULT", None)
    env["TIERFLOW_SPARK_THRESHOLD_BYTES"] = "1"  # the whole topic is "heavy": Spark, no flag
    target = tmp_path / "restored"
    killed = restore(target, env={**env, ENV_CRASH_AT: "restore.before_log#1"})
    assert killed.returncode != 0, killed.stdout
    assert "Traceback" not in killed.stderr and "the Spark job over" in killed.stderr
    assert not list(target.rglob("*.log")), "no segment took its name: the job was killed"
    assert not list(target.rglob("partition.metadata")), "no partition is finished"
    done = restore(target, "--json", env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert [p["partition"] for p in document["partitions"]] == ["orders-0", "orders-1"]
    for partition in (0, 1):
        assert_restored_as_written(t.store, t.log("orders", partition), target)
    assert not [p for p in target.rglob("*") if p.name.endswith(".restoring")]
    batches = list((t.settings.data_dir / "restore-jobs").rglob("results.jsonl"))
    assert len(batches) == 1, "the rerun's batch went through spark-submit and wrote results"
    results = [json.loads(line) for line in batches[0].read_text().splitlines()]
    assert len(results) == 5 and all(r["written"] and not r["error"] for r in results)
