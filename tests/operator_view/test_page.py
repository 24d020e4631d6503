"""The page and its JSON through the web app: the figures in the HTML are the snapshot's,
links lead to the task instances of this Airflow's runs (and only those), the tables and the
form are labelled for screen readers, and nothing answers without Airflow's login."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from tests.operator_view.conftest import COPY_TI, RETENTION_TI, ViewData
from tests.operator_view.dom import accessibility, parse
from tierflow.operator_view.airflow_auth import require_airflow_reader
from tierflow.operator_view.app import create_app
from tierflow.operator_view.cells import task_instance_path
from tierflow.operator_view.formatting import human_bytes
from tierflow.operator_view.options import ViewOptions
from tierflow.operator_view.snapshot import build_snapshot

PROJECT = Path(__file__).resolve().parents[2]
PLUGIN = PROJECT / "plugins" / "tierflow_plugin.py"


class KnownRuns:
    """The runs "this Airflow" has, as the plugin's ``airflow_runs`` would find them in its
    metadata DB; it also keeps what each page asked, to show the page asks once."""

    def __init__(self, *runs: tuple[str, str]) -> None:
        self.runs = set(runs)
        self.asked: list[frozenset[tuple[str, str]]] = []

    def __call__(self, wanted: frozenset[tuple[str, str]]) -> set[tuple[str, str]]:
        self.asked.append(wanted)
        return self.runs & wanted


def load_plugin() -> ModuleType:
    spec = importlib.util.spec_from_file_location("tierflow_plugin_under_test", PLUGIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def known_runs() -> KnownRuns:
    """This Airflow ran the copy that died; the retention run was another Airflow's."""
    return KnownRuns((COPY_TI.dag_id, COPY_TI.run_id))


@pytest.fixture
def client(view_data: ViewData, known_runs: KnownRuns) -> TestClient:
    """The app mounted as the API server mounts it, under a root path like a proxied Airflow."""
    app = create_app(
        auth=require_airflow_reader,
        mount_prefix="/tierflow",
        settings=lambda: view_data.t.settings,
        clock=lambda: view_data.now_ms,
        runs=known_runs,
    )
    server = FastAPI()
    server.mount("/tierflow", app)
    client = TestClient(server)
    client.app_under_test = app  # type: ignore[attr-defined]
    return client


def logged_in(client: TestClient) -> TestClient:
    client.app_under_test.dependency_overrides[require_airflow_reader] = lambda: None  # type: ignore[attr-defined]
    return client


def route_paths(app: FastAPI) -> list[str]:
    return [route.path for route in app.routes]  # type: ignore[attr-defined]


def test_every_route_requires_airflows_login(client: TestClient) -> None:
    app = client.app_under_test  # type: ignore[attr-defined]
    paths = route_paths(app)
    assert paths == ["/", "/api/snapshot"]
    for path in paths:
        response = client.get(f"/tierflow{path}")
        assert response.status_code == 401, path
        assert response.json() == {"detail": "Not authenticated"}
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert client.get(f"/tierflow{path}").status_code in (401, 404)


def test_the_plugin_wires_an_authenticated_app_into_the_ui() -> None:
    plugin = load_plugin()
    (view,) = plugin.TierflowPlugin.external_views
    assert view == {
        "name": "Tiered storage",
        "href": "tierflow/",
        "url_route": "tiered-storage",
        "destination": "nav",
        "category": "browse",
    }
    (mounted,) = plugin.TierflowPlugin.fastapi_apps
    assert mounted["url_prefix"] == "/tierflow" and view["href"] == "tierflow/"
    app = mounted["app"]
    routes = app.routes
    assert routes and all(isinstance(r, APIRoute) for r in routes), routes
    for route in routes:
        calls = [d.call for d in route.dependant.dependencies]
        assert calls[0] is require_airflow_reader, route.path  # before anything else runs


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    """Every Airflow process imports plugins; only the API server's requests need the rest."""
    code = (
        "import runpy, sys; runpy.run_path(sys.argv[1]); "
        "heavy = ['tierflow.metrics', 'tierflow.metadata.store', 'sqlmodel', "
        "'airflow.api_fastapi.core_api.security']; "
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(PLUGIN)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_the_page_shows_the_snapshots_figures(view_data: ViewData, client: TestClient) -> None:
    d = view_data
    response = logged_in(client).get("/tierflow/?stuck_after=60&events=10")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    tables, links = parse(response.text)
    snap = build_snapshot(
        d.t.store, d.t.settings, now_ms=d.now_ms, options=ViewOptions(stuck_after_s=60, events=10)
    )

    topics = {row.attrs["data-topic"]: row for row in tables["topics"]}
    assert list(topics) == [t.topic for t in snap.topics]
    for t in snap.topics:
        row = topics[t.topic]
        local = row.cells["local"]
        assert (local.attrs["data-bytes"], local.attrs["data-segments"]) == (
            str(t.local_bytes),
            str(t.local_segments),
        )
        assert local.text.strip() == f"{human_bytes(t.local_bytes)} / {t.local_segments}"
        assert row.value("remote_log_size_bytes") == str(t.remote_log_size_bytes)
        for state, totals in t.remote.items():
            assert row.value(f"segments_{state}") == str(totals.segments)
        assert row.value("tiered_state") == t.tiered_state
        assert row.cells["retention"].attrs["data-ms"] == str(t.retention_ms)
        assert row.cells["retention"].attrs["data-bytes"] == str(t.retention_bytes)
        lag = row.cells["remote_copy_lag"]
        assert lag.attrs["data-bytes"] == str(t.remote_copy_lag_bytes)

    assert "partitions" not in tables and "retention-partitions" not in tables
    assert [a["href"] for a in links if a.get("href", "").startswith("?topic=")] == [
        f"?topic={t.topic}&stuck_after=60&events=10&limit=50" for t in snap.topics
    ]

    stuck = [r.attrs["data-segment-id"] for r in tables["stuck"]]
    assert stuck == [s.segment_id for s in snap.stuck] and len(stuck) == 3
    assert [r.attrs["data-event-id"] for r in tables["events"]] == [str(e.id) for e in snap.events]

    copy_links = [a for a in links if a.get("data-task-id") == "prepare"]
    assert copy_links, "the stuck copies link to the task instance that started them"
    for link in copy_links:
        assert link["href"] == "/" + task_instance_path(COPY_TI)
        assert (link["data-dag-id"], link["data-run-id"], link["data-map-index"]) == (
            COPY_TI.dag_id,
            COPY_TI.run_id,
            str(COPY_TI.map_index),
        )

    chart = response.text[response.text.index('<svg id="history-chart"') :]
    assert f'data-last-remote-size="{snap.history[-1].remote_log_size_bytes}"' in chart
    assert f'data-last-copy-lag="{snap.history[-1].remote_copy_lag_bytes}"' in chart


@pytest.mark.parametrize("topic", ["orders", "payments"])
def test_a_topics_view_lists_its_partitions(
    view_data: ViewData, client: TestClient, topic: str
) -> None:
    d = view_data
    html = logged_in(client).get(f"/tierflow/?topic={topic}&stuck_after=60").text
    tables, _links = parse(html)
    options = ViewOptions(topic, stuck_after_s=60)
    snap = build_snapshot(d.t.store, d.t.settings, now_ms=d.now_ms, options=options)

    partitions = {
        (r.attrs["data-topic"], int(r.attrs["data-partition"])): r for r in tables["partitions"]
    }
    assert list(partitions) == [(m.topic, m.partition) for m in snap.partitions]
    assert {name for name, _n in partitions} == {topic}
    for m in snap.partitions:
        row = partitions[(m.topic, m.partition)]
        for name in ("highest_remote_offset", "log_start_offset", "local_log_start_offset"):
            assert row.value(name) == str(getattr(m, name))
        assert row.value("broker") == "0"
        assert row.cells["remote_copy_lag"].attrs["data-bytes"] == str(m.remote_copy_lag_bytes)
        assert row.cells["remote_copy_lag"].attrs["data-segments"] == str(
            m.remote_copy_lag_segments
        )
        assert row.cells["remote_delete_lag"].attrs["data-bytes"] == str(m.remote_delete_lag_bytes)

    retention = {r.attrs["data-topic"]: r for r in tables["retention-topics"]}
    for t in snap.retention.topics:
        assert retention[t.topic].value("remote_bytes") == str(t.remote_bytes)
        assert retention[t.topic].value("remote_segments") == str(t.remote_segments)
    shown = [r.attrs["data-segment"] for r in tables["retention-deletions"]]
    assert shown == [x.segment for x in snap.retention.deletions] and shown
    assert 'data-page="1" data-pages="1"' in html and 'rel="next"' not in html


def test_links_keep_airflows_root_path(view_data: ViewData) -> None:
    """Behind a proxy at /airflow, task instance links must stay under it."""
    app = create_app(
        auth=require_airflow_reader,
        settings=lambda: view_data.t.settings,
        clock=lambda: view_data.now_ms,
        runs=KnownRuns((COPY_TI.dag_id, COPY_TI.run_id)),
    )
    app.dependency_overrides[require_airflow_reader] = lambda: None
    server = FastAPI(root_path="/airflow")
    server.mount("/tierflow", app)
    html = TestClient(server).get("/airflow/tierflow/?stuck_after=60").text
    _, links = parse(html)
    hrefs = {a["href"] for a in links if "data-airflow-link" in a}
    assert hrefs and all(h.startswith("/airflow/dags/") for h in hrefs), hrefs


def test_json_is_the_snapshot(view_data: ViewData, client: TestClient) -> None:
    d = view_data
    response = logged_in(client).get("/tierflow/api/snapshot?topic=orders&stuck_after=60")
    expected = build_snapshot(
        d.t.store, d.t.settings, now_ms=d.now_ms, options=ViewOptions("orders", stuck_after_s=60)
    )
    assert response.json() == expected.as_dict()


def test_an_unknown_topic_is_a_404(client: TestClient) -> None:
    logged_in(client)
    assert client.get("/tierflow/api/snapshot?topic=nope").status_code == 404
    page = client.get("/tierflow/?topic=nope")
    assert page.status_code == 404 and "unknown topic" in page.text


def test_the_forms_empty_fields_mean_not_given(client: TestClient) -> None:
    logged_in(client)
    page = client.get("/tierflow/?topic=&partition=&stuck_after=&events=5&limit=10")
    assert page.status_code == 200 and 'id="partitions-summary"' in page.text
    bad = client.get("/tierflow/?partition=x")
    assert bad.status_code == 422 and "partition must be a whole number" in bad.text
    assert client.get("/tierflow/api/snapshot?limit=0").status_code == 422


def test_only_runs_of_this_airflow_are_linked(
    view_data: ViewData, client: TestClient, known_runs: KnownRuns
) -> None:
    """The failed delete was started by a retention run this Airflow never had (its events
    too): plain text. The dead copy's run is this Airflow's: linked. One lookup a page."""
    html = logged_in(client).get("/tierflow/?stuck_after=60&events=1000").text
    tables, links = parse(html)
    assert known_runs.asked == [
        {(COPY_TI.dag_id, COPY_TI.run_id), (RETENTION_TI.dag_id, RETENTION_TI.run_id)}
    ]
    linked = {(a["data-dag-id"], a["data-run-id"]) for a in links if "data-airflow-link" in a}
    assert linked == {(COPY_TI.dag_id, COPY_TI.run_id)}
    by_retention = [
        row.cells[field]
        for table, field in (("stuck", "started_by"), ("events", "actor"))
        for row in tables[table]
        if row.cells[field].attrs.get("data-run-id") == RETENTION_TI.run_id
    ]
    assert len(by_retention) >= 3, "the failed delete, and the retention run's events"
    for cell in by_retention:
        assert "data-unlinked" in cell.attrs and "not a run of this Airflow" in cell.text
    copies = [r for r in tables["stuck"] if r.attrs["data-segment-id"] in view_data.stuck_copies]
    assert copies and all("data-unlinked" not in r.cells["started_by"].attrs for r in copies)


def test_without_a_run_lookup_nothing_links(view_data: ViewData) -> None:
    """Outside Airflow no run can be checked, so no task instance is linked."""
    app = create_app(
        auth=lambda: None, settings=lambda: view_data.t.settings, clock=lambda: view_data.now_ms
    )
    html = TestClient(app).get("/?stuck_after=60").text
    tables, links = parse(html)
    assert [a for a in links if "data-airflow-link" in a] == []
    named = [r.cells["started_by"] for r in tables["stuck"]]
    assert named and all("data-unlinked" in cell.attrs for cell in named)


@pytest.mark.parametrize("query", ["?stuck_after=60", "?topic=orders&stuck_after=60"])
def test_tables_and_the_form_are_labelled(client: TestClient, query: str) -> None:
    html = logged_in(client).get(f"/tierflow/{query}").text
    found = accessibility(html)
    assert {"topics", "stuck", "events"} <= set(found.tables)
    for table_id, attrs in found.tables.items():
        assert attrs.get("aria-label") or table_id in found.captions, table_id
    assert found.headers and all(th.get("scope") == "col" for th in found.headers)
    names = {c["name"] for c in found.controls}
    assert {"topic", "partition", "stuck_after", "events", "limit"} <= names
    for control in found.controls:
        assert control.get("id") in found.label_for, control
