"""What every tierflow DAG shares, set once: the owner, retries with exponential backoff, the
start date, no catchup and one run at a time (a run must finish before the next plans again);
and the schedule of the DAGs that follow segment_copy's new remote segments.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pendulum
from airflow.sdk import Asset, AssetOrTimeSchedule, CronTriggerTimetable, dag
from airflow.sdk.definitions.dag import ScheduleArg

from tierflow.assets import REMOTE_SEGMENTS

START_DATE = pendulum.datetime(2026, 1, 1, tz="UTC")


def default_args(
    *,
    retries: int = 3,
    retry_delay: timedelta = timedelta(seconds=30),
    max_retry_delay: timedelta = timedelta(minutes=10),
) -> dict[str, Any]:
    """Every task's retries: the delay doubles from ``retry_delay`` up to ``max_retry_delay``."""
    return {
        "owner": "tierflow",
        "retries": retries,
        "retry_delay": retry_delay,
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": max_retry_delay,
    }


def tierflow_dag(
    *,
    schedule: ScheduleArg,
    tags: list[str],
    params: dict[str, Any] | None = None,
    retries: int = 3,
    retry_delay: timedelta = timedelta(seconds=30),
    max_retry_delay: timedelta = timedelta(minutes=10),
) -> Callable[[Callable], Callable]:
    """The ``@dag`` decorator with what every tierflow DAG shares, said once rather than in
    each DAG file: the DAG id is the decorated function's name, its doc the DAG file's
    docstring, and its tags ``tierflow`` and then ``tags``. The rest is the DAG's own."""

    def decorate(define: Callable) -> Callable:
        return dag(
            dag_id=define.__name__,
            schedule=schedule,
            start_date=START_DATE,
            catchup=False,
            max_active_runs=1,
            doc_md=define.__globals__.get("__doc__"),
            tags=["tierflow", *tags],
            params=params,
            default_args=default_args(
                retries=retries, retry_delay=retry_delay, max_retry_delay=max_retry_delay
            ),
        )(define)

    return decorate


def cron_or_new_segments(cron: str) -> AssetOrTimeSchedule:
    """On ``cron`` (UTC), and whenever segment_copy finishes new remote segments (the
    ``tierflow://remote-segments`` Asset)."""
    return AssetOrTimeSchedule(
        timetable=CronTriggerTimetable(cron, timezone="UTC"), assets=[Asset(REMOTE_SEGMENTS)]
    )
