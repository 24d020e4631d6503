"""Small things several DAGs do alike: offer and read a dry-run switch, read a trigger param,
and fail for good (no retry) on an error a retry cannot fix."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from airflow.sdk import Param, get_current_context


def run_param(name: str) -> Any:
    """The run's value of the DAG param ``name`` (its default unless the trigger set it)."""
    return get_current_context()["params"][name]


def dry_run_param(description: str) -> Param:
    """The ``dry_run`` switch of the trigger form, off by default."""
    return Param(False, type="boolean", title="Dry run", description=description)


def dry_run() -> bool:
    """Whether the run was triggered with ``dry_run`` on: plan and report, change nothing."""
    return bool(run_param("dry_run"))


@contextmanager
def fail_for_good(*errors: type[Exception]) -> Iterator[None]:
    """Turn ``errors`` into AirflowFailException: a rejected request, failed partitions or
    data loss stay so however often the task retries."""
    from airflow.sdk.exceptions import AirflowFailException

    try:
        yield
    except errors as exc:
        raise AirflowFailException(str(exc)) from exc
