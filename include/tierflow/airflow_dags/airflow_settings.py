"""The pools, connections and variables of an Astro-style ``airflow_settings.yaml``, applied to
an Airflow's metadata database (``tierflow airflow apply-settings``).

Plain Airflow does not read that file, so a deployment without the Astro CLI applies it with
this; the local Airflow of the checkout does the same before its components start. Airflow and
YAML are imported when the settings are applied, never when a DAG file is parsed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def apply_settings(settings_file: Path) -> dict[str, int]:
    """Create the pools, connections and variables of an Astro-style airflow_settings.yaml."""
    import yaml
    from airflow.models.pool import Pool
    from airflow.models.variable import Variable

    doc = yaml.safe_load(settings_file.read_text()) or {}
    section = doc.get("airflow") or {}
    pools = [p for p in section.get("pools") or [] if p.get("pool_name")]
    connections = [c for c in section.get("connections") or [] if c.get("conn_id")]
    variables = [v for v in section.get("variables") or [] if v.get("variable_name")]
    for pool in pools:
        Pool.create_or_update_pool(
            pool["pool_name"],
            int(pool.get("pool_slot", 1)),
            pool.get("pool_description", ""),
            include_deferred=False,
        )
    _replace_connections(connections)
    for var in variables:
        Variable.set(var["variable_name"], var.get("variable_value"))
    return {"pools": len(pools), "connections": len(connections), "variables": len(variables)}


def _replace_connections(connections: list[dict[str, Any]]) -> None:
    """Each connection of the file replaces the one of the same id, in one session."""
    from airflow.models.connection import Connection
    from airflow.utils.session import create_session

    with create_session() as session:
        for conn in connections:
            extra = conn.get("conn_extra")
            session.query(Connection).filter(Connection.conn_id == conn["conn_id"]).delete()
            session.add(
                Connection(
                    conn_id=conn["conn_id"],
                    conn_type=conn.get("conn_type"),
                    host=conn.get("conn_host"),
                    schema=conn.get("conn_schema"),
                    login=conn.get("conn_login"),
                    password=conn.get("conn_password"),
                    port=conn.get("conn_port"),
                    extra=json.dumps(extra) if isinstance(extra, dict) else extra,
                )
            )
