"""Which Airflow task instance wrote a row: carried in the actor strings the store records.

A copy's lease owner must stay the same for every run, try and clear of a partition (a cleared
rerun takes its own lease over), so the task instance cannot be the owner. It rides in the
*actor* instead: the owner followed by a query string, for example
``airflow:segment_copy:orders-0?dag_id=segment_copy&run_id=manual__…&task_id=prepare&map_index=0&try_number=1``.
The operator view parses it back to link a segment to the task instance that started it.
Outside a task (the CLI, tests) the actor is the owner alone.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode

SEPARATOR = "?"


@dataclass(frozen=True)
class TaskInstanceRef:
    dag_id: str
    run_id: str
    task_id: str
    map_index: int = -1  # -1: not a mapped task
    try_number: int | None = None


def with_task_instance(base: str, ti: TaskInstanceRef | None) -> str:
    """``base`` with the task instance appended (``base`` alone when there is none)."""
    if ti is None:
        return base
    fields = {
        "dag_id": ti.dag_id,
        "run_id": ti.run_id,
        "task_id": ti.task_id,
        "map_index": str(ti.map_index),
    }
    if ti.try_number is not None:
        fields["try_number"] = str(ti.try_number)
    return f"{base}{SEPARATOR}{urlencode(fields)}"


def task_instance_of(actor: str | None) -> TaskInstanceRef | None:
    """The task instance named in an actor string, or None (a CLI run, an older row)."""
    if not actor or SEPARATOR not in actor:
        return None
    query = parse_qs(actor.split(SEPARATOR, 1)[1], keep_blank_values=True)
    fields = {name: values[-1] for name, values in query.items()}
    try:
        return TaskInstanceRef(
            dag_id=fields["dag_id"],
            run_id=fields["run_id"],
            task_id=fields["task_id"],
            map_index=int(fields.get("map_index", "-1")),
            try_number=int(fields["try_number"]) if fields.get("try_number") else None,
        )
    except (KeyError, ValueError):
        return None


def actor_base(actor: str) -> str:
    """The actor without its task instance: the lease owner, or whoever it was."""
    return actor.split(SEPARATOR, 1)[0]


def current_task_instance() -> TaskInstanceRef | None:
    """The running Airflow task instance, or None outside a task (or without Airflow).

    A process that has not imported Airflow's SDK runs no task (the CLI, a test): importing it
    here would cost a second and set Airflow's logging up in a command's output."""
    if "airflow.sdk" not in sys.modules:
        return None
    try:
        from airflow.sdk import get_current_context

        ti = get_current_context()["ti"]
    except (ImportError, RuntimeError, KeyError):
        return None
    map_index = getattr(ti, "map_index", -1)
    return TaskInstanceRef(
        dag_id=ti.dag_id,
        run_id=ti.run_id,
        task_id=ti.task_id,
        map_index=-1 if map_index is None else int(map_index),
        try_number=getattr(ti, "try_number", None),
    )


def attributed(base: str) -> str:
    """``base`` plus the running task instance, when there is one."""
    return with_task_instance(base, current_task_instance())
