"""The installed ``tierflow`` script runs ``airflow test-dag`` inside a checkout as ``python -m
tierflow.cli`` does: its sys.path starts at the venv's bin/, not at the checkout, so it must
find the checkout's ``dev`` package (the dag.test() runner) by itself. No PYTHONPATH helps."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import airflow_env, migrated_home
from tests.cli.process import tierflow, tierflow_env
from tests.support.tiered import build_tiered

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def test_test_dag_runs_from_the_console_script_in_the_checkout(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    home = tmp_path / "airflow"
    migrated_home(PROJECT, home)
    env = {**tierflow_env(t.settings), **airflow_env(PROJECT, home)}
    env.pop("PYTHONPATH", None)
    done = tierflow(env, "airflow", "test-dag", "index_cache", cwd=PROJECT, timeout_s=600)
    assert "runs from a checkout" not in done.stderr
    assert done.returncode == 0, done.stderr[-3000:]
    assert "TIERFLOW_DAG_STATE=success" in done.stdout.splitlines(), done.stdout[-3000:]
