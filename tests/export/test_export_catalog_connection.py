"""``TIERFLOW_ICEBERG_CATALOG``: the export commits to the catalog of an Airflow Iceberg
connection, built by the provider's hook, instead of the store's database. Here the connection
names a SQL catalog of its own (test_export_rest_catalog.py runs a real REST catalog); the table
is in that catalog, its files in the bucket, its rows the committed records. A connection
that is missing, or a REST catalog that does not answer, is one line naming the setting."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.iceberg_rows import assert_holds_committed
from tests.support.ports import free_port
from tests.support.tiered import Tiered
from tierflow.export.catalog import settings_catalog
from tierflow.export.table import existing_table

pytestmark = [pytest.mark.slow]


def connection(conn_id: str, host: str, **extra: str) -> dict[str, str]:
    """An Iceberg connection in Airflow's JSON form, as the environment holds it."""
    value = {"conn_type": "iceberg", "host": host, "extra": extra}
    return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(value)}


def export(t: Tiered, conn_id: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**os.environ, **t.settings.as_env(), "TIERFLOW_ICEBERG_CATALOG": conn_id, **env}
    command = [sys.executable, "-m", "tierflow.cli", "export", "iceberg", "--json"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_the_export_commits_to_the_catalog_of_an_iceberg_connection(
    tiered: Tiered, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t, catalog_db = tiered, tmp_path / "catalog.db"
    env = connection("lake", f"sqlite:///{catalog_db}", type="sql")
    done = export(t, "lake", env)
    assert done.returncode == 0, done.stderr
    (report,) = json.loads(done.stdout)["topics"]
    assert report["committed"] and report["table"] == "kafka.orders"

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    table = existing_table(settings_catalog(t.settings.updated(iceberg_catalog="lake")), "orders")
    assert table is not None and table.location().startswith(f"file://{t.settings.remote_storage}")
    assert_holds_committed(table, [t.log("orders", 0), t.log("orders", 1)])
    with sqlite3.connect(catalog_db) as db:
        assert db.execute("SELECT table_name FROM iceberg_tables").fetchall() == [("orders",)]
    assert existing_table(settings_catalog(t.settings), "orders") is None, "not the store's"


@pytest.mark.parametrize("case", ["missing connection", "REST catalog not answering"])
def test_a_catalog_that_cannot_be_had_is_one_line(tiered: Tiered, case: str) -> None:
    env = (
        {}
        if case == "missing connection"
        else connection("lake", f"http://127.0.0.1:{free_port()}")
    )
    failed = export(tiered, "lake", env)
    assert failed.returncode != 0 and "Traceback" not in failed.stderr
    (line,) = failed.stderr.strip().splitlines()
    assert line.startswith("tierflow: error: TIERFLOW_ICEBERG_CATALOG=lake: "), line
