"""``tierflow copy --spark`` submits the DAG's Spark application (spark_apps/rewrite_segments.py)
through Airflow's Spark hook, outside any Airflow: with no spark_default connection it takes
the checkout's airflow_settings.yaml (local[*]), and ends as any copy does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.copy_end_state import assert_complete_and_clean
from tests.support.tiered import build_tiered

pytestmark = [pytest.mark.slow]


def test_copy_with_spark_outside_airflow(tmp_path: Path) -> None:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    env = {**os.environ, **t.settings.as_env(), "AIRFLOW_HOME": str(tmp_path / "airflow")}
    env.pop("AIRFLOW_CONN_SPARK_DEFAULT", None)
    command = [sys.executable, "-m", "tierflow.cli", "copy", "--topic", "orders", "--spark"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout
    assert_complete_and_clean(t)
    # Airflow's logging (the Spark hook imports it) stays off stdout: the report alone.
    lines = done.stdout.splitlines()
    assert all(line.startswith(("  orders-", "orders-")) for line in lines[:-1]), done.stdout
    assert lines[-1].startswith("copied ") and "[info" not in done.stderr
    jobs = list((t.settings.data_dir / "rewrite-jobs").rglob("results.jsonl"))
    assert len(jobs) == 1, "one batch went through spark-submit, and wrote its results"
