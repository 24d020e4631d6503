"""tierflow's Airflow plugin: the "Tiered storage" page in the UI's Browse menu.

Wiring only. The page is a FastAPI app on the API server (``fastapi_apps``) shown by the UI in
an iframe (``external_views`` with a ``url_route``). Every route requires an Airflow login with
read access to task instances (``tierflow.operator_view.airflow_auth``): Airflow does not
protect plugin routes itself. A task instance is linked only when its run is in this Airflow
(``airflow_runs`` asks its metadata DB). Everything heavy is imported by the request handlers,
since every Airflow process, down to each task, imports its plugins.
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from tierflow.operator_view.airflow_auth import require_airflow_reader
from tierflow.operator_view.airflow_runs import airflow_runs
from tierflow.operator_view.app import create_app

URL_PREFIX = "/tierflow"
NAME = "Tiered storage"

app = create_app(auth=require_airflow_reader, mount_prefix=URL_PREFIX, runs=airflow_runs)


class TierflowPlugin(AirflowPlugin):
    name = "tierflow"
    fastapi_apps = [{"app": app, "url_prefix": URL_PREFIX, "name": NAME}]
    external_views = [
        {
            "name": NAME,
            "href": f"{URL_PREFIX.lstrip('/')}/",  # relative: Airflow may live under a path
            "url_route": "tiered-storage",
            "destination": "nav",
            "category": "browse",
        }
    ]
