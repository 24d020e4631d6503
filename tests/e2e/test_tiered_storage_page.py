"""The Tiered storage page on a real, running Airflow 3, opened in headless Chromium.

One Airflow (api-server, scheduler, dag-processor on loopback, the checkout's plugins/) serves
the module, over a generated broker log dir. The `stuck_run` fixture makes the data the page
shows, once for the module (the tests only read it): segment_copy tiers orders; then payments
is registered and a second run is stopped after its prepare tasks (pools hold the rest back,
then the run is marked failed), leaving COPY_SEGMENT_STARTED segments started by a real task
instance: a copy whose task died. The `disabled_run` fixture then registers a topic as a task
instance of another Airflow would (a dag.test() run, as `make demo`'s private Airflow makes) and
disables it with a run of this Airflow's topic_disablement. Each test runs on its own, in any
order:

- the plugin is loaded, and every route of its app refuses a request without Airflow's login
  (no credentials, a forged token, a forged session cookie) and answers with one;
- the stopped copy's segments are STARTED and name the task instances that started them;
- logged in, Chromium opens the page from the UI's navigation route, asks the page's form for
  segments stuck longer than 1 s, and every figure in the DOM is checked against the store
  and the log dirs; the retention preview against a real dry run of retention_expiry; the
  screenshot is saved to data/e2e/tiered-storage-page.png; a stuck segment's link leads the
  UI to the task instance that started it; every task instance link on the page is one this
  Airflow has (the disablement run's events among them), and the other Airflow's is plain
  text; the chart's axes are ticked at round sizes and UTC dates, and hovering a step names
  its exact value, as the store's events replay it; tables and the form are labelled;
- ``tierflow status --json`` prints the figures the page's JSON shows.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from dev.airflow_server import AirflowApi, LocalAirflow, free_port, xcom_value
from tests.e2e import browser
from tests.e2e.png import summarize_png
from tests.e2e.runs import (
    describe_tasks,
    mark_run,
    set_pool_slots,
    task_instances,
    trigger,
    unpause,
    wait_for_run,
    wait_until,
)
from tests.operator_view.expected import SIZE_STATES, expected_partitions, expected_topics
from tests.support.tiered import NOW_MS, TOPICS
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.ids import new_kafka_uuid
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import wall_clock_ms
from tierflow.operator_view.cells import task_instance_path
from tierflow.operator_view.formatting import human_bytes
from tierflow.runtime import open_store, partition_logs
from tierflow.tasks.attribution import TaskInstanceRef, task_instance_of, with_task_instance
from tierflow.units import iso_utc

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
PLUGIN = PROJECT / "plugins" / "tierflow_plugin.py"
SCREENSHOT = PROJECT / "data" / "e2e" / "tiered-storage-page.png"
PREFIX = "/tierflow"
FRAME = "document.querySelector('iframe[title=\"Tiered storage\"]')"
STUCK_AFTER_S = 1
STATUS_ARGS = ("--events", "50", "--stuck-after", str(STUCK_AFTER_S))  # the page's defaults
AUDIT = "audit"  # registered by another Airflow's task, disabled by this one's (no partitions)
ELSEWHERE = TaskInstanceRef(  # a dag.test() run of a private Airflow, as `make demo` runs
    "topic_disablement", "manual__2026-01-01T00:00:00.000000+00:00", "request", try_number=1
)
SIZE_LABEL = re.compile(r"(?P<number>\d+(?:\.\d{1,2})?) (?P<unit>B|KiB|MiB|GiB|TiB)")
BINARY = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
# A time tick's label by its step: seconds, minutes or hours, days, months, years.
TIME_LABELS = ("%m-%d %H:%M:%S", "%m-%d %H:%M", "%Y-%m-%d", "%Y-%m", "%Y")

# The page's tables as data, read from inside the UI's iframe (same origin).
READ_PAGE = f"""(() => {{
  const doc = {FRAME}.contentDocument;
  const attrs = (e) => Object.fromEntries([...e.attributes].map((a) => [a.name, a.value]));
  const tables = {{}};
  for (const table of doc.querySelectorAll("table[id]")) {{
    tables[table.id] = [...table.querySelectorAll("tbody tr")].map((tr) => ({{
      attrs: attrs(tr),
      cells: Object.fromEntries([...tr.querySelectorAll("[data-field]")].map(
        (td) => [td.dataset.field, {{attrs: attrs(td), text: td.innerText.trim()}}])),
    }}));
  }}
  const chart = doc.querySelector("#history-chart");
  const texts = (selector, key) => chart ? [...chart.querySelectorAll(selector)].map(
    (t) => [t.dataset[key], t.textContent.trim()]) : [];
  return {{
    tables,
    links: [...doc.querySelectorAll("a[data-airflow-link]")].map(attrs),
    retentionAsOf: doc.querySelector("#retention-as-of").dataset.value,
    stuckAfter: doc.querySelector("#stuck-after").dataset.value,
    chart: chart ? attrs(chart) : null,
    yTicks: texts(".y-tick", "tickBytes"),
    xTicks: texts(".x-tick", "tickMs"),
    hover: chart ? [...chart.querySelectorAll("rect.hover")].map((r) => ({{
      ...attrs(r), title: r.querySelector("title").textContent}})) : [],
    a11y: {{
      tables: [...doc.querySelectorAll("table")].map(
        (t) => t.getAttribute("aria-label") || (t.caption && t.caption.textContent) || ""),
      headers: [...doc.querySelectorAll("th")].map((th) => th.getAttribute("scope")),
      controls: [...doc.querySelectorAll("input, select, textarea")]
        .filter((c) => c.type !== "hidden").map((c) => ({{
          name: c.name,
          labelledFor: !!c.id && !!doc.querySelector(`label[for="${{CSS.escape(c.id)}}"]`),
        }})),
    }},
  }};
}})()"""


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    base = tmp_path_factory.mktemp("tierflow")
    settings = Settings.embedded(base)
    generate_log_dir(settings.log_dirs[0], topics=TOPICS, seed=11, now_ms=NOW_MS)
    register(settings, "orders")
    return settings


@pytest.fixture(scope="module")
def airflow(tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Iterator[LocalAirflow]:
    home = tmp_path_factory.mktemp("airflow-home")
    extra = {**settings.as_env(), "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False"}
    with LocalAirflow(PROJECT, home, free_port(), extra_env=extra) as server:
        yield server


@pytest.fixture(scope="module")
def stuck_run(airflow: LocalAirflow, settings: Settings) -> dict[str, Any]:
    """A copy of orders, then a copy stopped after prepare: its run, and the prepare task
    instance of payments-0; ``first`` is the first run."""
    api = airflow.api
    unpause(api, "segment_copy")
    first = trigger(api, "segment_copy", {"reason": "tier orders"})["dag_run_id"]
    wait_for_run(api, "segment_copy", first, timeout_s=180)

    register(settings, "payments")
    run_id, prepares = run_stopped_after_prepare(api)
    (payments,) = [t for t in prepares if t["rendered_map_index"].endswith(": payments-0")]
    time.sleep(STUCK_AFTER_S + 0.5)  # older than the threshold the browser will ask for
    return {"first": first, "run_id": run_id, "prepare": payments}


@pytest.fixture(scope="module")
def disabled_run(airflow: LocalAirflow, settings: Settings, stuck_run: dict[str, Any]) -> str:
    """A topic registered by a task instance of another Airflow (ELSEWHERE), then disabled
    (retain) by a run of this Airflow's topic_disablement: that run's id. After the copies, so
    the page shows their events too."""
    actor = with_task_instance("airflow:topic_disablement", ELSEWHERE)
    open_store(settings).register_topic(
        AUDIT, new_kafka_uuid(), actor=actor, now_ms=wall_clock_ms(), remote_storage_enable=True
    )
    api = airflow.api
    conf = {"topic": AUDIT, "action": "disable", "policy": "retain"}
    run_id = trigger(api, "topic_disablement", conf)["dag_run_id"]
    unpause(api, "topic_disablement")
    wait_for_run(api, "topic_disablement", run_id, timeout_s=180)
    return run_id


def run_stopped_after_prepare(api: AirflowApi) -> tuple[str, list[dict[str, Any]]]:
    """A segment_copy run marked failed once its prepare tasks succeeded and before any task
    after them ran (pools hold them back): its id and its prepare task instances."""
    copy_slots = set_pool_slots(api, "tierflow_copy", 0)  # prepare waits...
    default_slots = None
    try:
        run_id = trigger(api, "segment_copy", {"reason": "a worker dies"})["dag_run_id"]

        def explain() -> str:
            return describe_tasks(task_instances(api, "segment_copy", run_id))

        def listed() -> bool:  # the plan, whose shards prepare maps over (default pool)
            tis = task_instances(api, "segment_copy", run_id)
            return any(t["task_id"] == "plan" and t["state"] == "success" for t in tis)

        wait_until("the plan", listed, timeout_s=120, explain=explain)
        default_slots = set_pool_slots(api, "default_pool", 0)  # ...and then nothing after it
        set_pool_slots(api, "tierflow_copy", copy_slots)

        def prepared() -> list[dict[str, Any]]:
            tis = [
                t for t in task_instances(api, "segment_copy", run_id) if t["task_id"] == "prepare"
            ]
            return tis if tis and all(t["state"] == "success" for t in tis) else []

        prepares = wait_until("every prepare", prepared, timeout_s=120, explain=explain)
        mark_run(api, "segment_copy", run_id, "failed")
    finally:
        set_pool_slots(api, "tierflow_copy", copy_slots)
        if default_slots is not None:
            set_pool_slots(api, "default_pool", default_slots)
    return run_id, prepares


def register(settings: Settings, topic: str) -> None:
    log_ = next(p for p in partition_logs(settings.log_dirs) if p.topic == topic)
    open_store(settings).register_topic(
        topic, log_.topic_id(), actor="e2e", now_ms=NOW_MS, remote_storage_enable=True
    )


def plugin_routes() -> list[str]:
    """The paths of the plugin's app, as Airflow loads it from plugins/."""
    code = (
        "import runpy, sys, json; app = runpy.run_path(sys.argv[1])['app']; "
        "print(json.dumps([r.path for r in app.routes]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(PLUGIN)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def status_of(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_every_route_of_the_page_requires_airflows_login(airflow: LocalAirflow) -> None:
    (plugin,) = [
        p for p in airflow.api.get("/api/v2/plugins")["plugins"] if p["name"] == "tierflow"
    ]
    assert [a["url_prefix"] for a in plugin["fastapi_apps"]] == [PREFIX]
    assert [(v["name"], v["url_route"], v["href"]) for v in plugin["external_views"]] == [
        ("Tiered storage", "tiered-storage", "tierflow/")
    ]
    routes = plugin_routes()
    assert routes == ["/", "/api/snapshot"]
    refusals = {
        "anonymous": {},
        "forged bearer token": {"Authorization": "Bearer not.a.jwt"},
        "forged session cookie": {"Cookie": "_token=not.a.jwt"},
    }
    for path in routes:
        url = f"{airflow.url}{PREFIX}{path}"
        for what, headers in refusals.items():
            assert status_of(url, headers) in (401, 403), (path, what)
        assert status_of(url, {"Authorization": f"Bearer {airflow.api.token()}"}) == 200, path
    for hidden in ("/docs", "/redoc", "/openapi.json"):
        assert status_of(f"{airflow.url}{PREFIX}{hidden}", {}) in (401, 403, 404), hidden


def test_a_copy_then_a_copy_whose_tasks_stopped_after_prepare(
    settings: Settings, stuck_run: dict[str, Any]
) -> None:
    run_id, payments = stuck_run["run_id"], stuck_run["prepare"]
    store = open_store(settings)
    rows = store.segments(store.topic("payments").topic_id, 0)
    assert rows and {r.state for r in rows} == {S.COPY_SEGMENT_STARTED}
    for row in rows:
        ti = task_instance_of(row.owner)
        assert ti is not None, row.owner
        assert (ti.dag_id, ti.run_id, ti.task_id, ti.map_index) == (
            "segment_copy",
            run_id,
            "prepare",
            payments["map_index"],
        )
        assert ti.try_number == payments["try_number"]
    # Real attribution from the first run as well: its STARTED events name their tasks.
    started = [e for e in store.events(entity="segment") if e.to_state == S.COPY_SEGMENT_STARTED]
    assert {task_instance_of(e.actor).run_id for e in started} == {stuck_run["first"], run_id}


def test_the_page_in_chromium_shows_the_stores_figures(
    airflow: LocalAirflow, settings: Settings, stuck_run: dict[str, Any], disabled_run: str
) -> None:
    if shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is not installed: `make test-servers` installs it")
    api, store = airflow.api, open_store(settings)
    # With a logical date: a run without one has no data_interval_end in its context, and
    # retention_expiry's expire task reads that key (KeyError; reported, dags/ is not ours).
    now = datetime.now(UTC).isoformat()
    dry_run = trigger(api, "retention_expiry", {"dry_run": True}, logical_date=now)["dag_run_id"]
    unpause(api, "retention_expiry")

    with browser.logged_in(
        f"{airflow.url}/plugin/tiered-storage", login=("admin", airflow.password)
    ) as page:
        page.wait_for(f"!!{FRAME}.contentDocument.querySelector('#topics')")
        assert page.evaluate(f"new URL({FRAME}.src).pathname") == f"{PREFIX}/"
        # As on-call would: ask the page's own form for what is stuck longer than 1 s.
        page.evaluate(
            f"(() => {{ const doc = {FRAME}.contentDocument;"
            f" doc.querySelector('input[name=stuck_after]').value = '{STUCK_AFTER_S}';"
            " doc.querySelector('#filters').requestSubmit(); return true; })()"
        )
        page.wait_for(
            f"{FRAME}.contentDocument.querySelector('#stuck-after')?.dataset.value === "
            f"'{STUCK_AFTER_S}' && !!{FRAME}.contentDocument.querySelector('#stuck')"
        )
        shown = page.evaluate(READ_PAGE)
        text = page.evaluate(f"{FRAME}.contentDocument.body.innerText")
        page.save_screenshot(SCREENSHOT)

        check_topics(shown["tables"]["topics"], store, settings)
        assert "partitions" not in shown["tables"], "all topics: summed per topic, not listed"
        stuck_ids = check_stuck(shown, store, stuck_run)
        check_chart(shown["chart"], shown["tables"]["topics"])
        check_axes(shown["yTicks"], shown["xTicks"], shown["hover"], shown["chart"])
        check_hover(shown["hover"], store, shown["tables"]["topics"])
        check_links(shown, api, stuck_run, disabled_run)
        check_labels(shown["a11y"])
        assert "Tiered storage" in text and "Next retention run" in text

        # A topic lists its partitions (one page holds them all here): its name in the topic
        # table is a link to its view, as is the topic in the form, which each view keeps.
        by_topic = {}
        open_topic = {
            "orders": f"[...{FRAME}.contentDocument.querySelectorAll('#topics a')]"
            ".find((a) => a.textContent === 'orders').click()",
            "payments": f"(() => {{ const doc = {FRAME}.contentDocument;"
            " doc.querySelector('select[name=topic]').value = 'payments';"
            " doc.querySelector('#filters').requestSubmit(); })()",
        }
        for name, action in open_topic.items():
            page.evaluate(f"(() => {{ {action}; return true; }})()")
            page.wait_for(
                f"!!{FRAME}.contentDocument.querySelector('#partitions tr[data-topic=\"{name}\"]')"
            )
            by_topic[name] = page.evaluate(READ_PAGE)
        check_partitions(
            [row for view in by_topic.values() for row in view["tables"]["partitions"]],
            store,
            settings,
        )
        shown = by_topic["orders"]
        check_labels(shown["a11y"])  # with the partition and retention tables

        # The link of a stuck segment (payments' view shows them too) takes the UI to the task
        # instance that started it.
        prepare = stuck_run["prepare"]
        link = f"a[data-airflow-link][data-run-id='{stuck_run['run_id']}']"
        page.evaluate(f'{FRAME}.contentDocument.querySelector("{link}").click()')
        wanted = f"/dags/segment_copy/runs/{stuck_run['run_id']}/tasks/prepare/mapped/"
        path = page.wait_for(
            f"decodeURIComponent(location.pathname).startsWith({json.dumps(wanted)})"
            " && location.pathname"
        )
        assert path.endswith(f"/mapped/{prepare['map_index']}")
        page.wait_for("document.body.innerText.includes('payments-0')")

    summary = summarize_png(SCREENSHOT)
    assert (summary.width, summary.height) == (browser.WIDTH, browser.HEIGHT)
    assert summary.colours > 50, "the screenshot is (nearly) blank"
    print(f"screenshot of the Tiered storage page: {SCREENSHOT} ({len(stuck_ids)} stuck)")

    # The preview: for orders (all of it weeks past retention.ms, nothing in flight) the real
    # dry run, now, and the page's plan for 02:00 UTC agree.
    wait_for_run(api, "retention_expiry", dry_run, timeout_s=180)
    report = xcom_value(api, "retention_expiry", dry_run, "report")
    assert report["dry_run"] is True
    (orders,) = [
        r for r in shown["tables"]["retention-topics"] if r["attrs"]["data-topic"] == "orders"
    ]
    planned = report["topics"]["orders"]
    assert int(value(orders, "remote_segments")) == planned["remote_segments"] > 0
    assert int(value(orders, "remote_bytes")) == planned["remote_bytes"]
    assert int(value(orders, "local_segments")) == planned["local_segments"]
    assert int(value(orders, "local_bytes")) == planned["local_bytes"]


@pytest.mark.usefixtures("stuck_run")  # the page's figures with a stuck copy among them
@pytest.mark.parametrize("topic", [None, "orders"])
def test_tierflow_status_prints_the_pages_figures(
    airflow: LocalAirflow, settings: Settings, topic: str | None
) -> None:
    narrow = {"topic": topic} if topic else {}
    page = airflow.api.get(
        f"{PREFIX}/api/snapshot", stuck_after=STUCK_AFTER_S, history="false", **narrow
    )
    env = {**os.environ, **settings.as_env()}
    argv = ["--topic", topic] if topic else []
    out = subprocess.run(
        [sys.executable, "-m", "tierflow.cli", "status", "--json", *STATUS_ARGS, *argv],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=PROJECT,
    )
    cli = json.loads(out.stdout)
    assert bool(cli["partitions"]) == bool(topic)
    assert cli["partition_page"] == page["partition_page"]
    assert cli["brokers"] == page["brokers"]
    assert cli["partitions"] == page["partitions"]
    assert cli["topics"] == page["topics"]
    assert cli["events"] == page["events"]
    assert cli["retention"] == page["retention"]
    timeless = ("since_ms", "age_ms", "lease_live")
    assert [{k: v for k, v in s.items() if k not in timeless} for s in cli["stuck"]] == [
        {k: v for k, v in s.items() if k not in timeless} for s in page["stuck"]
    ]


# -- checks of the DOM against the store -----------------------------------------------------


def value(row: dict[str, Any], field: str, attribute: str = "data-value") -> str:
    return row["cells"][field]["attrs"][attribute]


def check_topics(rows: list[dict[str, Any]], store, settings: Settings) -> None:
    expected = expected_topics(store, settings.log_dirs[0])
    by_topic = {r["attrs"]["data-topic"]: r for r in rows}
    assert value(by_topic.pop(AUDIT), "tiered_state") == "DISABLED"  # on no broker's disk
    assert sorted(by_topic) == sorted(expected) == ["orders", "payments"]
    for name, e in expected.items():
        row, topic = by_topic[name], store.topic(name)
        assert int(value(row, "local", "data-bytes")) == e.local_bytes
        assert int(value(row, "local", "data-segments")) == e.local_segments
        assert row["cells"]["local"]["text"] == f"{human_bytes(e.local_bytes)} / {e.local_segments}"
        assert int(value(row, "remote_log_size_bytes")) == e.remote_log_size_bytes
        for state in S:
            assert int(value(row, f"segments_{state.value}")) == e.states[state.value], state
        assert int(value(row, "remote_copy_lag", "data-bytes")) == e.remote_copy_lag_bytes
        assert int(value(row, "remote_delete_lag", "data-bytes")) == e.remote_delete_lag_bytes
        assert value(row, "tiered_state") == topic.tiered_state
        assert row["cells"]["tiered_epoch"]["attrs"]["data-value"] == str(topic.tiered_epoch)
        assert int(value(row, "retention", "data-ms")) == topic.retention_ms
        assert int(value(row, "retention", "data-bytes")) == topic.retention_bytes
    assert expected["orders"].states[S.COPY_SEGMENT_FINISHED.value] > 0
    assert expected["payments"].states[S.COPY_SEGMENT_STARTED.value] > 0


def check_partitions(rows: list[dict[str, Any]], store, settings: Settings) -> None:
    expected = expected_partitions(store, settings.log_dirs[0])
    by_key = {(r["attrs"]["data-topic"], int(r["attrs"]["data-partition"])): r for r in rows}
    assert sorted(by_key) == sorted(expected)
    for key, e in expected.items():
        row = by_key[key]
        for name in ("highest_remote_offset", "log_start_offset", "local_log_start_offset"):
            assert int(value(row, name)) == getattr(e, name), (key, name)
        assert int(value(row, "remote_log_size_bytes")) == e.remote_log_size_bytes
        lag = row["cells"]["remote_copy_lag"]["attrs"]
        assert (int(lag["data-bytes"]), int(lag["data-segments"])) == (
            e.remote_copy_lag_bytes,
            e.remote_copy_lag_segments,
        ), key
        delete = row["cells"]["remote_delete_lag"]["attrs"]
        assert (int(delete["data-bytes"]), int(delete["data-segments"])) == (
            e.remote_delete_lag_bytes,
            e.remote_delete_lag_segments,
        )


def check_stuck(shown: dict[str, Any], store, stuck_run: dict[str, Any]) -> list[str]:
    assert shown["stuckAfter"] == str(STUCK_AFTER_S)
    started = [
        r
        for t in store.topics()
        for p in store.partitions(t.topic_id)
        for r in store.segments(t.topic_id, p.partition, states=[S.COPY_SEGMENT_STARTED])
    ]
    rows = shown["tables"]["stuck"]
    ids = [r["attrs"]["data-segment-id"] for r in rows]
    assert sorted(ids) == sorted(r.segment_id for r in started) and ids
    prepare = stuck_run["prepare"]
    links = [a for a in shown["links"] if a["data-run-id"] == stuck_run["run_id"]]
    assert links, "each stuck segment links to the task instance that started it"
    for link in links:
        ti = task_instance_of(next(r.owner for r in started))
        assert ti is not None
        assert link["href"] == "/" + task_instance_path(ti)
        assert (link["data-dag-id"], link["data-task-id"], int(link["data-map-index"])) == (
            "segment_copy",
            "prepare",
            prepare["map_index"],
        )
    return ids


def check_chart(chart: dict[str, str] | None, topics: list[dict[str, Any]]) -> None:
    """The chart ends at today's figures: the topic rows summed."""
    assert chart is not None, "the chart is drawn"
    remote = sum(int(value(r, "remote_log_size_bytes")) for r in topics)
    lag = sum(int(r["cells"]["remote_copy_lag"]["attrs"].get("data-bytes", 0)) for r in topics)
    assert (int(chart["data-last-remote-size"]), int(chart["data-last-copy-lag"])) == (remote, lag)
    assert int(chart["data-points"]) > 2, "copies show up as steps"


def size_of(label: str) -> int:
    """``1.25 MiB`` -> 1310720, as a person reads the label; it must be that round."""
    if label == "0":
        return 0
    match = SIZE_LABEL.fullmatch(label)
    assert match, f"not a round size: {label!r}"
    return int(float(match["number"]) * BINARY[match["unit"]])


def check_axes(
    y_ticks: list[list[str]], x_ticks: list[list[str]], hover: list, chart: dict[str, str]
) -> None:
    """Sizes at even round steps up to the first at or above the largest value; UTC times
    labelled with their dates, inside the chart's span."""
    sizes = [int(v) for v, _label in y_ticks]
    assert [size_of(label) for _v, label in y_ticks] == sizes
    assert 2 <= len(sizes) <= 5 and sizes == [i * sizes[1] for i in range(len(sizes))]
    largest = max(int(h["data-bytes"]) for h in hover)
    assert sizes[-2] < largest <= sizes[-1], (largest, y_ticks)
    first, last = int(chart["data-first-ms"]), int(chart["data-last-ms"])
    assert len(x_ticks) >= 2, x_ticks
    for raw, label in x_ticks:
        at = datetime.fromtimestamp(int(raw) / 1000, tz=UTC)
        assert label in {at.strftime(pattern) for pattern in TIME_LABELS}, (raw, label)
        assert int(raw) % 1000 == 0 and first <= int(raw) <= last


def remote_size_at(events: list, sizes: dict[str, int], time_ms: int) -> int:
    """RemoteLogSizeBytes right after the events up to ``time_ms``, replayed the plain way."""
    state: dict[str, str] = {}
    for event in events:
        if event.event_timestamp_ms <= time_ms:
            state[event.segment_id] = event.to_state
    return sum(sizes[s] for s, now in state.items() if now in SIZE_STATES)


def check_hover(hover: list[dict[str, str]], store, topics: list[dict[str, Any]]) -> None:
    """Each step's hover text is its exact value and time: remote size as the store's events
    replay it, copy lag ending at the topic rows' sum."""
    sizes = {
        row.segment_id: row.segment_size_bytes
        for t in store.topics()
        for p in store.partitions(t.topic_id)
        for row in store.segments(t.topic_id, p.partition)
    }
    events = store.events(entity="segment")
    names = {
        "remote_log_size_bytes": "Remote size (RemoteLogSizeBytes)",
        "remote_copy_lag_bytes": "Copy lag (RemoteCopyLagBytes)",
    }
    for target in hover:
        size, at = int(target["data-bytes"]), int(target["data-time-ms"])
        name = names[target["data-series"]]
        assert target["title"] == f"{name}: {human_bytes(size)} ({size:,} bytes) at {iso_utc(at)}"
    remote = [h for h in hover if h["data-series"] == "remote_log_size_bytes"]
    assert len(remote) > 2, "the copies show up as steps"
    for target in remote:
        at = int(target["data-time-ms"])
        assert int(target["data-bytes"]) == remote_size_at(events, sizes, at), target["title"]
    lag = [h for h in hover if h["data-series"] == "remote_copy_lag_bytes"]
    summed = sum(int(r["cells"]["remote_copy_lag"]["attrs"].get("data-bytes", 0)) for r in topics)
    assert int(lag[-1]["data-bytes"]) == summed


def check_links(
    shown: dict[str, Any], api: AirflowApi, stuck_run: dict[str, Any], disabled_run: str
) -> None:
    """A task instance is a link only when its run is this Airflow's, and every link leads to
    a task instance that this Airflow's REST API finds; the other Airflow's is plain text."""
    runs = {a["data-run-id"] for a in shown["links"]}
    assert {stuck_run["run_id"], disabled_run} <= runs and ELSEWHERE.run_id not in runs
    disabling = {a["data-task-id"] for a in shown["links"] if a["data-run-id"] == disabled_run}
    assert disabling == {"request", "complete"}, "its DISABLING and DISABLED events"
    unlinked = [
        row["cells"]["actor"]
        for row in shown["tables"]["events"]
        if "data-unlinked" in row["cells"]["actor"]["attrs"]
    ]
    assert [cell["attrs"]["data-run-id"] for cell in unlinked] == [ELSEWHERE.run_id]
    assert "not a run of this Airflow" in unlinked[0]["text"]
    found = {
        (a["data-dag-id"], a["data-run-id"], a["data-task-id"], int(a["data-map-index"]))
        for a in shown["links"]
    }
    for dag_id, run_id, task_id, map_index in sorted(found):
        path = (
            f"/api/v2/dags/{quote(dag_id, safe='')}/dagRuns/{quote(run_id, safe='')}"
            f"/taskInstances/{quote(task_id, safe='')}"
        )
        ti = api.get(path + (f"/{map_index}" if map_index >= 0 else ""))
        assert (ti["dag_id"], ti["dag_run_id"], ti["task_id"], ti["map_index"]) == (
            dag_id,
            run_id,
            task_id,
            map_index,
        )


def check_labels(a11y: dict[str, Any]) -> None:
    """Every table is named and its headers are column headers; every control has a label."""
    assert a11y["tables"] and all(a11y["tables"]), a11y["tables"]
    assert a11y["headers"] and set(a11y["headers"]) == {"col"}
    controls = {c["name"]: c["labelledFor"] for c in a11y["controls"]}
    assert {"topic", "partition", "stuck_after", "events", "limit"} <= set(controls)
    assert all(controls.values()), controls
