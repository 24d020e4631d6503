"""Timing one DAG run of a live Airflow through its REST API v2 (helper of cluster_scale.py).

The wall time is the client's: from just before the trigger request to the first poll that
sees the run finished (polled every ``POLL_S``). The task instances and the plan task's
start and end are Airflow's own, read from the task instance API.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from dev.airflow_server import AirflowApi, task_instances, xcom_value

POLL_S = 0.5
FINISHED = {"success", "failed"}


@dataclass(frozen=True)
class RunTiming:
    dag_id: str
    run_id: str
    state: str
    wall_s: float  # trigger -> finished, as the client saw it
    task_instances: int  # mapped ones counted one by one
    plan_s: float  # the planning task's own duration (start to end)
    result: Any  # the return value of the run's summary task

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def time_run(
    api: AirflowApi,
    dag_id: str,
    *,
    conf: dict[str, Any],
    plan_task: str,
    result_task: str,
    timeout_s: float,
) -> RunTiming:
    """Trigger a manual run (as the UI does), wait for it, and read its figures."""
    api.patch(f"/api/v2/dags/{dag_id}", {"is_paused": False})
    started = time.perf_counter()
    run = api.post(f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf})
    run_id = run["dag_run_id"]
    state = _wait(api, dag_id, run_id, started + timeout_s)
    wall = time.perf_counter() - started
    tis = task_instances(api, dag_id, run_id)
    if state != "success":
        failed = [f"{t['task_id']}[{t['map_index']}] {t['state']}" for t in tis]
        raise RuntimeError(f"{dag_id} run {run_id} ended {state}: {', '.join(failed)}")
    plan = next(t for t in tis if t["task_id"] == plan_task)
    # A run with nothing to do skips every task after its plan: no result to read then.
    ran = any(t["task_id"] == result_task and t["state"] == "success" for t in tis)
    return RunTiming(
        dag_id,
        run_id,
        state,
        wall,
        len(tis),
        _seconds(plan["start_date"], plan["end_date"]),
        xcom_value(api, dag_id, run_id, result_task) if ran else None,
    )


def _wait(api: AirflowApi, dag_id: str, run_id: str, deadline: float) -> str:
    while True:
        state = api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"]
        if state in FINISHED:
            return state
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{dag_id} run {run_id} still {state} at the deadline")
        time.sleep(POLL_S)


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
