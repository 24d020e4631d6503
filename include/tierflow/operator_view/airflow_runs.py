"""The page's run lookup inside Airflow: which (dag_id, run_id) pairs Airflow's metadata DB has.

The plugin hands ``airflow_runs`` to the app, which calls it once per page with the distinct
runs the page lists. It runs in the API server, which holds the metadata DB's session; Airflow
is imported only then, since every Airflow process imports the plugin, and nothing outside
Airflow (``tierflow status``, the tests of the page) needs it.
"""

from __future__ import annotations

from collections.abc import Collection


def airflow_runs(wanted: Collection[tuple[str, str]]) -> set[tuple[str, str]]:
    """The pairs of ``wanted`` that are runs of this Airflow: one indexed query (dag_run's
    unique key is (dag_id, run_id))."""
    if not wanted:
        return set()
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select, tuple_

    query = select(DagRun.dag_id, DagRun.run_id).where(
        tuple_(DagRun.dag_id, DagRun.run_id).in_(sorted(wanted))
    )
    with create_session() as session:
        return {(str(dag_id), str(run_id)) for dag_id, run_id in session.execute(query)}
