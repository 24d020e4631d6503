"""Run a sequence of DAG runs with dag.test() in ONE process: ``python -m tests.security.run_dags
PLAN.json``.

The DAG tests start one Python process per run (``tierflow airflow test-dag``); every start
imports Airflow and the providers again, about 8 s each. The security test runs seven DAGs in
one Airflow home, so it runs them here one after another, exactly as test-dag does each one,
and prints ``TIERFLOW_DAG_STATE <label>=<state>`` after each.

A plan step is either a run, ``{"label", "dag_id", "conf"?, "logical_date"?}``, or Kafka
deleting a topic between runs, ``{"label", "delete_topic", "log_dir"}``: its partition
directories are renamed to ``<dir>.<uuid>-delete``, as a broker does.
"""

from __future__ import annotations

import json
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

from dev.airflow_local import test_dag
from tierflow.airflow_dags.airflow_settings import apply_settings

PROJECT = Path(__file__).resolve().parents[2]


def delete_topic(log_dir: Path, topic: str) -> None:
    for path in sorted(log_dir.glob(f"{topic}-[0-9]*")):
        path.rename(path.with_name(f"{path.name}.{uuid.uuid4().hex}-delete"))


def run_step(step: dict[str, Any]) -> None:
    print(f"=== TIERFLOW_STEP {step['label']}", flush=True)
    if "delete_topic" in step:
        delete_topic(Path(step["log_dir"]), step["delete_topic"])
        return
    logical = step.get("logical_date")
    state = test_dag(
        step["dag_id"],
        PROJECT / "dags",
        run_conf=step.get("conf") or {},
        logical_date=datetime.fromisoformat(logical) if logical else None,
    )
    print(f"TIERFLOW_DAG_STATE {step['label']}={state}", flush=True)


def main(argv: list[str]) -> int:
    plan = json.loads(Path(argv[1]).read_text())
    apply_settings(PROJECT / "airflow_settings.yaml")
    for step in plan:
        run_step(step)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
