"""Waiting on DAG runs of a live Airflow through its REST API v2, with useful failures."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from dev.airflow_server import AirflowApi, task_instances

FINISHED = {"success", "failed"}
TASK_FAILED = {"failed", "up_for_retry"}
TASK_BUSY = {"scheduled", "queued", "running", "restarting", "deferred", None}


def trigger(
    api: AirflowApi, dag_id: str, conf: dict[str, Any], logical_date: str | None = None
) -> dict[str, Any]:
    """A manual run now, as the UI's Trigger button makes it (no logical date by default)."""
    body = {"logical_date": logical_date, "conf": conf}
    return api.post(f"/api/v2/dags/{dag_id}/dagRuns", body)


def unpause(api: AirflowApi, dag_id: str) -> None:
    api.patch(f"/api/v2/dags/{dag_id}", {"is_paused": False})


def run_state(api: AirflowApi, dag_id: str, run_id: str) -> str:
    return api.get(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"]


def describe_tasks(tis: Iterable[dict[str, Any]]) -> str:
    lines = [
        f"  {ti['task_id']}[{ti['map_index']}] {ti['state']} (try {ti['try_number']})"
        for ti in sorted(tis, key=lambda t: (t["task_id"], t["map_index"]))
    ]
    return "\n".join(lines)


def wait_until(
    what: str, check: Callable[[], Any], *, timeout_s: float, explain: Callable[[], str]
) -> Any:
    """Poll check() every second until it returns something truthy; on timeout, explain."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout_s:.0f} s waiting for {what}\n{explain()}"
            )
        time.sleep(1)


def wait_for_run(api: AirflowApi, dag_id: str, run_id: str, *, timeout_s: float = 120) -> str:
    """The run's final state; the task states are in the message when it is not success."""

    def explain() -> str:
        state = run_state(api, dag_id, run_id)
        return f"{dag_id} {run_id} is {state}:\n" + describe_tasks(
            task_instances(api, dag_id, run_id)
        )

    def finished() -> str | None:
        state = run_state(api, dag_id, run_id)
        return state if state in FINISHED else None

    state = wait_until(f"{dag_id} run {run_id}", finished, timeout_s=timeout_s, explain=explain)
    assert state == "success", explain()
    return state


def wait_for_failed_tries(
    api: AirflowApi, dag_id: str, run_id: str, *, timeout_s: float = 90
) -> list[dict[str, Any]]:
    """Task instances whose try failed, once no task of the run is busy any more."""

    def settled() -> list[dict[str, Any]]:
        tis = task_instances(api, dag_id, run_id)
        failed = [ti for ti in tis if ti["state"] in TASK_FAILED]
        busy = [ti for ti in tis if ti["state"] in TASK_BUSY - {None}]
        return failed if failed and not busy else []

    return wait_until(
        f"a failed task in {dag_id} {run_id}",
        settled,
        timeout_s=timeout_s,
        explain=lambda: describe_tasks(task_instances(api, dag_id, run_id)),
    )


def set_pool_slots(api: AirflowApi, pool: str, slots: int) -> int:
    """Resize a pool (the default pool too); returns its previous size."""
    before = api.get(f"/api/v2/pools/{pool}")["slots"]
    body = {"pool": pool, "slots": slots, "include_deferred": False}
    api.patch(f"/api/v2/pools/{pool}", body, update_mask="slots")
    return int(before)


def mark_run(api: AirflowApi, dag_id: str, run_id: str, state: str) -> dict[str, Any]:
    """Set a run's state as the UI's "Mark run as" does (its unfinished tasks stop)."""
    return api.patch(f"/api/v2/dags/{dag_id}/dagRuns/{run_id}", {"state": state})
