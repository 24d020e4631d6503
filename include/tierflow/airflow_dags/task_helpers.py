"""Small things several DAGs do alike: offer switches and choices on the trigger form, read a
trigger param, and fail for good (no retry) on an error a retry cannot fix."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from airflow.sdk import Param, get_current_context


def run_param(name: str) -> Any:
    """The run's value of the DAG param ``name`` (its default unless the trigger set it)."""
    return get_current_context()["params"][name]


def switch_param(default: bool, title: str, description: str) -> Param:
    """An on/off switch of the trigger form."""
    return Param(default, type="boolean", title=title, description=description)


def choice_param(choices: Sequence[str], title: str, description: str) -> Param:
    """One of ``choices`` on the trigger form, the first by default."""
    return Param(
        choices[0], type="string", enum=list(choices), title=title, description=description
    )


def dry_run_param(description: str) -> Param:
    """The ``dry_run`` switch of the trigger form, off by default."""
    return switch_param(False, "Dry run", description)


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
