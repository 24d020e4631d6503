"""Who did it, as a cell shows it: a task instance's label and its page in the Airflow UI.

The cells themselves are the macros of ``templates/cells.html``.
"""

from __future__ import annotations

from urllib.parse import quote

from tierflow.tasks.attribution import TaskInstanceRef


def task_instance_path(ti: TaskInstanceRef) -> str:
    """The Airflow UI's page of a task instance, relative to Airflow's root."""
    path = (
        f"dags/{quote(ti.dag_id, safe='')}/runs/{quote(ti.run_id, safe='')}"
        f"/tasks/{quote(ti.task_id, safe='')}"
    )
    return path + (f"/mapped/{ti.map_index}" if ti.map_index >= 0 else "")


def actor_label(ti: TaskInstanceRef) -> str:
    """``segment_copy / prepare[2] (try 1)``: the task instance a link leads to."""
    label = f"{ti.dag_id} / {ti.task_id}"
    if ti.map_index >= 0:
        label += f"[{ti.map_index}]"
    if ti.try_number is not None:
        label += f" (try {ti.try_number})"
    return label
