"""Airflow's own authentication and authorization, as one FastAPI dependency for the page.

A plugin's FastAPI app is mounted on the API server as is: Airflow protects none of its routes.
This dependency runs Airflow's ``get_user`` (the JWT from an ``Authorization: Bearer`` header,
or the UI's session cookie; 401 without either, 403 for a bad token) and then asks the
configured auth manager whether that user may read DAG task instances (403 if not): the page
shows what the tierflow DAGs did and links to their task instances.

Airflow's security module is imported when a request arrives, not when the plugin is loaded:
every Airflow process (scheduler, DAG processor, each task) imports plugins, and only the API
server needs it.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

_bearer = HTTPBearer(auto_error=False)


async def require_airflow_reader(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import get_user, requires_access_dag

    user = await get_user(request, None, credentials)
    requires_access_dag("GET", DagAccessEntity.TASK_INSTANCE)(request, user)
