"""Whether a run of a DAG that deletes (retention_expiry, remote_partition_removal,
topic_disablement with policy delete) is a dry run. Pure, so it is tested without Airflow.

The rule, in order:

1. ``dry_run`` set explicitly in the run's conf wins, whatever started the run.
2. A manual trigger takes the form's ``dry_run`` switch, which is **on** by default: a click on
   Trigger, or an API call with no conf, deletes nothing.
3. A backfill runs for real: it is an explicit operator command with explicit dates.
4. A scheduled run runs for real, except the first one: with no earlier successful run of the
   DAG (just deployed or unpaused for the first time) it is a dry run, unless
   ``TIERFLOW_ALLOW_FIRST_RUN=true``. Any successful run counts, a dry run included, so the
   next night deletes. Airflow looks only at runs with an earlier logical date: a run
   triggered from the UI (which has none) does not count.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tierflow.config import Settings


def allow_first_run(env: Mapping[str, str]) -> bool:
    """``TIERFLOW_ALLOW_FIRST_RUN=true`` in ``env``: the first scheduled run may delete."""
    return Settings.airflow_from_env(env).allow_first_run


def is_dry_run(
    *,
    run_type: str,
    conf: Mapping[str, Any],
    form_dry_run: bool,
    had_successful_run: bool,
    first_run_allowed: bool,
) -> bool:
    """The rule of the module docstring. ``run_type`` is Airflow's ("manual", "scheduled",
    "backfill", "asset_triggered"); ``form_dry_run`` the run's ``dry_run`` param (its default
    unless the trigger set it); ``had_successful_run`` whether an earlier run succeeded."""
    if conf.get("dry_run") is not None:
        return bool(conf["dry_run"])
    if run_type == "manual":
        return bool(form_dry_run)
    if run_type == "backfill":
        return False
    return not had_successful_run and not first_run_allowed
