"""The Iceberg export against a real REST catalog: Iceberg's own RESTCatalogServer
(tests/support/iceberg_rest.py), named by an Airflow Iceberg connection
(``TIERFLOW_ICEBERG_CATALOG``), the export run by the CLI in a process of its own.

A commit that pyiceberg reads back through the catalog; a rerun that commits nothing twice; a
catalog that goes away mid-commit (before the commit reaches it, or after it applied it and
before it answers), started again on the same port and warehouse, and the rerun committing
exactly once; OAuth2 client credentials on the wire. The server issues a token to any client
and checks none on later requests (Iceberg's test adapter), so the OAuth2 test shows what the
client sends, not a refusal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs

import pytest
from pyiceberg.table import Table

from tests.support.fault_proxy import Rule, running_fault_proxy
from tests.support.iceberg_rest import IcebergRest, connection_env
from tests.support.iceberg_rows import assert_holds_committed
from tests.support.tiered import Tiered
from tierflow.export.catalog import settings_catalog
from tierflow.export.table import existing_table

pytestmark = [pytest.mark.slow]

TABLE = "kafka.orders"
CLIENT_ID, CLIENT_SECRET = "tierflow-export", "rest-secret-5d1c9e"
TABLE_COMMIT = r"/v1/(?:[^/]+/)?namespaces/[^/]+/tables/[^/]+"  # POST: a table's commit


def export(
    t: Tiered, uri: str, *, run: str | None = None, **login: str
) -> subprocess.CompletedProcess:
    """``tierflow export iceberg --json`` into the REST catalog at ``uri``."""
    env = {**os.environ, **t.settings.as_env(), "TIERFLOW_ICEBERG_CATALOG": "lake"}
    env |= connection_env("lake", uri, **login)
    command = [sys.executable, "-m", "tierflow.cli", "export", "iceberg", "--json"]
    command += ["--run", run] if run else []
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def report(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    (topic,) = json.loads(done.stdout)["topics"]
    return topic


def assert_exported_once(t: Tiered, table: Table) -> None:
    """One snapshot holding every committed record; no file on disk that it does not hold."""
    assert len(table.snapshots()) == 1
    assert_holds_committed(table, [t.log("orders", 0), t.log("orders", 1)])
    held = {task.file.file_path for task in table.scan().plan_files()}
    data = Path(table.location().removeprefix("file://")) / "data"
    assert {f"file://{p}" for p in data.rglob("*.parquet")} == held


def test_a_commit_that_pyiceberg_reads_back_through_the_catalog(
    tiered: Tiered, iceberg_rest: IcebergRest
) -> None:
    done = report(export(tiered, iceberg_rest.uri))
    assert done["committed"] and done["table"] == TABLE and done["records"] > 0

    table = iceberg_rest.catalog().load_table(TABLE)
    assert table.location().startswith(f"file://{tiered.bucket()}/iceberg/"), "in the bucket"
    assert_exported_once(tiered, table)
    assert existing_table(settings_catalog(tiered.settings), "orders") is None, "not the store's"


def test_a_rerun_commits_nothing_twice(tiered: Tiered, iceberg_rest: IcebergRest) -> None:
    assert report(export(tiered, iceberg_rest.uri, run="run-1"))["committed"]
    again = report(export(tiered, iceberg_rest.uri, run="run-1"))
    assert again["committed_before"] and not again["committed"]
    later = report(export(tiered, iceberg_rest.uri, run="run-2"))
    assert not later["committed"] and later["records"] == 0, "nothing new"
    assert_exported_once(tiered, iceberg_rest.catalog().load_table(TABLE))


@pytest.mark.parametrize("applied", [False, True], ids=["before-commit", "after-commit"])
def test_a_catalog_that_goes_away_mid_commit_then_comes_back(
    tiered: Tiered, iceberg_rest: IcebergRest, applied: bool
) -> None:
    with running_fault_proxy(iceberg_rest.uri) as tap:
        # The next table commit: the server stopped before it is forwarded, or after it applied
        # it; either way the client's connection is closed unanswered.
        fault = "drop_response" if applied else "stall"
        commit = Rule(fault, "POST", path=TABLE_COMMIT, then_close=True, hook=iceberg_rest.stop)
        cut = tap.add(commit)
        failed = export(tiered, tap.endpoint, run="run-1")
        assert failed.returncode != 0 and cut.fired == ["/v1/namespaces/kafka/tables/orders"]
        (line,) = failed.stderr.strip().splitlines()  # one line, no traceback
        assert "the commit did not complete" in line and "orders" in line, line
        assert not iceberg_rest.running

        iceberg_rest.start()  # the same port, SQLite catalog and warehouse
        table = iceberg_rest.catalog().load_table(TABLE)
        assert len(table.snapshots()) == (1 if applied else 0)
        rerun = report(export(tiered, tap.endpoint, run="run-1"))
    assert rerun["committed"] is not applied and rerun["committed_before"] is applied
    assert_exported_once(tiered, iceberg_rest.catalog().load_table(TABLE))


def test_oauth2_client_credentials(tiered: Tiered, iceberg_rest: IcebergRest) -> None:
    with running_fault_proxy(iceberg_rest.uri) as tap:
        done = export(tiered, tap.endpoint, login=CLIENT_ID, password=CLIENT_SECRET)
    assert report(done)["committed"]
    tokens = [s for s in tap.seen if s.path == "/v1/oauth/tokens"]
    assert tokens and tap.seen[0] == tokens[0], "a token before anything else"
    for token in tokens:
        assert (token.method, token.authorization) == ("POST", None)
        form = parse_qs(token.body.decode())
        assert form["grant_type"] == ["client_credentials"]
        assert (form["client_id"], form["client_secret"]) == ([CLIENT_ID], [CLIENT_SECRET])
    rest = [s for s in tap.seen if s not in tokens]
    bearer = f"Bearer client-credentials-token:sub={CLIENT_ID}"  # what the server issued
    assert rest and {s.authorization for s in rest} == {bearer}
    assert CLIENT_SECRET not in done.stdout + done.stderr
    assert_exported_once(tiered, iceberg_rest.catalog().load_table(TABLE))
