"""When a run of a deleting DAG changes nothing: a manual trigger by default, and the first
scheduled run of a DAG (unless TIERFLOW_ALLOW_FIRST_RUN=true); never a later scheduled night."""

from __future__ import annotations

import pytest

from tierflow.airflow_dags.dry_run_rule import allow_first_run, is_dry_run


def decide(
    run_type: str,
    conf: dict | None = None,
    *,
    form: bool = True,
    had_success: bool = True,
    allowed: bool = False,
) -> bool:
    return is_dry_run(
        run_type=run_type,
        conf=conf or {},
        form_dry_run=form,
        had_successful_run=had_success,
        first_run_allowed=allowed,
    )


def test_a_manual_trigger_follows_the_form_which_defaults_to_a_dry_run() -> None:
    assert decide("manual") is True
    assert decide("manual", form=False) is False
    assert decide("manual", had_success=False, allowed=True) is True


@pytest.mark.parametrize("run_type", ["manual", "scheduled", "backfill", "asset_triggered"])
def test_dry_run_in_the_conf_wins(run_type: str) -> None:
    assert decide(run_type, {"dry_run": True}, form=False) is True
    assert decide(run_type, {"dry_run": False}, had_success=False) is False


def test_a_later_scheduled_run_deletes_whatever_the_form_default() -> None:
    assert decide("scheduled", form=True, had_success=True) is False


def test_the_first_scheduled_run_is_a_dry_run_unless_allowed() -> None:
    assert decide("scheduled", had_success=False) is True
    assert decide("scheduled", had_success=False, allowed=True) is False


def test_a_backfill_deletes_even_as_the_first_run() -> None:
    assert decide("backfill", had_success=False) is False


@pytest.mark.parametrize(
    ("value", "allowed"),
    [("true", True), ("TRUE", True), ("1", True), ("false", False), ("", False), (None, False)],
)
def test_allow_first_run_reads_the_variable(value: str | None, allowed: bool) -> None:
    env = {} if value is None else {"TIERFLOW_ALLOW_FIRST_RUN": value}
    assert allow_first_run(env) is allowed
