"""Small things several DAGs do alike: offer switches and choices on the trigger form, read a
trigger param, and fail for good (no retry) on an error a retry cannot fix."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from airflow.sdk import Param, get_current_context

from tierflow.airflow_dags.dry_run_rule import allow_first_run, is_dry_run
from tierflow.config import variable

log = logging.getLogger(__name__)


def run_param(name: str) -> Any:
    """The run's value of the DAG param ``name`` (its default unless the trigger set it)."""
    return get_current_context()["params"][name]


def switch_param(default: bool, title: str, description: str) -> Param:
    """An on/off switch of the trigger form."""
    return Param(default, type="boolean", title=title, description=description)


def optional_param(kind: str, title: str, description: str, **schema: object) -> Param:
    """A field of the trigger form that may stay empty (None): ``kind`` is its JSON type."""
    return Param(None, type=["null", kind], title=title, description=description, **schema)


def choice_param(choices: Sequence[str], title: str, description: str) -> Param:
    """One of ``choices`` on the trigger form, the first by default."""
    return Param(
        choices[0], type="string", enum=list(choices), title=title, description=description
    )


def dry_run_param(description: str) -> Param:
    """The ``dry_run`` switch of the trigger form, off by default."""
    return switch_param(False, "Dry run", description)


def deleting_dry_run_param(description: str) -> Param:
    """The ``dry_run`` switch of a DAG that deletes: on by default, so a manual trigger with
    the form untouched changes nothing (scheduled runs follow ``dry_run_rule`` instead)."""
    return switch_param(
        True, "Dry run", description + " On by default: switch it off to really delete."
    )


def dry_run() -> bool:
    """Whether this run of a deleting DAG is a dry run (plan and report, change nothing), by
    ``tierflow.airflow_dags.dry_run_rule``: the trigger's choice, a manual trigger's default,
    or, for a scheduled run, whether it is the DAG's first."""
    context = get_current_context()
    dag_run = context["dag_run"]
    run_type = str(getattr(dag_run.run_type, "value", dag_run.run_type))
    conf = dag_run.conf or {}
    # A lazy proxy: of None when no earlier run succeeded (``is None`` would not see it).
    had_successful_run = bool(context.get("prev_start_date_success"))
    decided = is_dry_run(
        run_type=run_type,
        conf=conf,
        form_dry_run=bool(context["params"]["dry_run"]),
        had_successful_run=had_successful_run,
        first_run_allowed=allow_first_run(os.environ),
    )
    if decided and conf.get("dry_run") is None and run_type != "manual":
        log.warning(
            "dry run: the DAG's first %s run (no earlier successful run) changes nothing; "
            "set %s=true to let it delete",
            run_type,
            variable("allow_first_run"),
        )
    return decided


@contextmanager
def fail_for_good(*errors: type[Exception]) -> Iterator[None]:
    """Turn ``errors`` into AirflowFailException: a rejected request, failed partitions or
    data loss stay so however often the task retries."""
    from airflow.sdk.exceptions import AirflowFailException

    try:
        yield
    except errors as exc:
        raise AirflowFailException(str(exc)) from exc
