"""tierflow on a real, running Airflow 3: api-server, scheduler and dag-processor on loopback.

One Airflow serves the whole module (it takes as long to start as a few tests take to run), on
free ports with a private AIRFLOW_HOME, over a generated broker log dir with the embedded
defaults (SQLite store, local bucket). What an operator would do, each test on its own:

- trigger segment_copy through the REST API and wait for it;
- break the bucket, see a task fail, repair it, clear the task as on-call would, and check the
  rerun leaves the metadata consistent;
- backfill three nights of retention_expiry, and dry-run it as the UI's Trigger button does;
- restore a topic from the bucket through partition_restore's form, dry run first;
- screenshot the DAG list in headless Chromium, logged in, with no import errors;
- stop Airflow and find none of its processes left.

No test relies on another having run: each asks a fixture for the data it starts from (`fresh`:
as generated; `copied`: both topics tiered), and the `airflow` fixture starts the shared server
again if a test stopped it.

Cron schedules are off on this instance ([scheduler] use_job_schedule), so the only runs are
the ones the test creates.
"""

from __future__ import annotations

import itertools
import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
import pytest

from dev.airflow_server import LocalAirflow, free_port, is_airflow_process, xcom_value
from tests.e2e import browser
from tests.e2e.png import summarize_png
from tests.e2e.runs import (
    describe_tasks,
    task_instances,
    trigger,
    unpause,
    wait_for_failed_tries,
    wait_for_run,
    wait_until,
)
from tests.support.restored import assert_restored_as_written
from tests.support.tiered import LAYOUTS, NOW_MS, TOPICS, eligible
from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.kafka.log_dir import PartitionLog
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import open_store, partition_logs
from tierflow.transform.keyring import KeyRing

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
SCREENSHOT = PROJECT / "data" / "e2e" / "airflow-dags.png"
DAG_IDS = (
    "diskless_gc",
    "diskless_merge",
    "iceberg_export",
    "index_cache",
    "partition_restore",
    "remote_compaction",
    "remote_partition_removal",
    "remote_reconcile",
    "retention_expiry",
    "segment_copy",
    "topic_disablement",
)
FIRST_TOPIC, SECOND_TOPIC = "orders", "payments"
BOTH_TOPICS = {FIRST_TOPIC, SECOND_TOPIC}
UNFINISHED = {S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED}
LIVE = {S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED}
# A segment in one of these states was copied once; retention may have expired it since.
COPIED_ONCE = {S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED}


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A generated broker log dir, chunked + zstd + AES-GCM storage; only orders is tiered yet."""
    base = tmp_path_factory.mktemp("tierflow")
    keyring = KeyRing.generate(base / "keys", "e2e-1").path
    settings = Settings.embedded(base, **LAYOUTS["chunked-encrypted"], keyring=keyring)
    generate_log_dir(settings.log_dirs[0], topics=TOPICS, seed=11, now_ms=NOW_MS)
    register(open_store(settings), settings, FIRST_TOPIC)
    copy_sqlite(store_file(settings), pristine_store(settings))
    return settings


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Iterator[LocalAirflow]:
    home = tmp_path_factory.mktemp("airflow-home")
    extra = {**settings.as_env(), "AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE": "False"}
    with LocalAirflow(PROJECT, home, free_port(), extra_env=extra) as started:
        yield started


@pytest.fixture
def airflow(server: LocalAirflow) -> LocalAirflow:
    """The module's one Airflow, started again (same home, same DB) if a test stopped it."""
    if not server.processes:
        try:
            server.start()
            server.wait_ready()
        except BaseException:
            server.stop()
            raise
    return server


@pytest.fixture
def fresh(settings: Settings) -> None:
    """The data as generated, whatever ran before: orders registered, nothing copied.

    SQLite's backup API restores the store in place, so a connection still open sees it too.
    The bucket is emptied; the log dir is only ever read (local segments are not deleted).
    """
    copy_sqlite(pristine_store(settings), store_file(settings))
    bucket = Path(settings.remote_storage)
    shutil.rmtree(bucket, ignore_errors=True)
    bucket.mkdir(parents=True)


@pytest.fixture
def copied(airflow: LocalAirflow, settings: Settings) -> None:
    """Orders and payments tiered, every eligible segment copied (retention may have expired
    some since): retention needs remote segments to judge. Runs segment_copy only if needed."""
    store = open_store(settings)
    if SECOND_TOPIC not in {t.name for t in store.topics()}:
        register(store, settings, SECOND_TOPIC)
    if copied_once(settings, BOTH_TOPICS):
        return
    unpause(airflow.api, "segment_copy")
    run = trigger(airflow.api, "segment_copy", {"reason": "tier orders and payments"})
    wait_for_run(airflow.api, "segment_copy", run["dag_run_id"], timeout_s=120)
    assert copied_once(settings, BOTH_TOPICS)


def store_file(settings: Settings) -> Path:
    return Path(settings.db_url.removeprefix("sqlite:///"))


def pristine_store(settings: Settings) -> Path:
    """Where the store as generated is kept, beside the data dir."""
    return settings.data_dir.with_name(f"{settings.data_dir.name}-pristine.db")


def copy_sqlite(source: Path, target: Path) -> None:
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)


def register(store: MetadataStore, settings: Settings, topic: str) -> None:
    """Turn tiering on for a topic of the log dir, as `tierflow topics register` does."""
    log_ = next(p for p in partition_logs(settings.log_dirs) if p.topic == topic)
    store.register_topic(
        topic, log_.topic_id(), actor="e2e", now_ms=NOW_MS, remote_storage_enable=True
    )


def segment_rows(settings: Settings, topics: set[str]) -> Iterator[tuple[PartitionLog, list]]:
    """Each partition of the topics with its remote segment rows, in offset order."""
    store = open_store(settings)
    for log_ in partition_logs(settings.log_dirs):
        if log_.topic in topics:
            yield log_, store.segments(store.topic(log_.topic).topic_id, log_.partition)


def assert_consistent(settings: Settings, topics: set[str]) -> None:
    """Nothing is half-done, and the bucket holds exactly the FINISHED segments' objects."""
    store = open_store(settings)
    expected: set[str] = set()
    for log_, rows in segment_rows(settings, topics):
        half_done = [r for r in rows if r.state in UNFINISHED]
        assert half_done == [], f"{log_.topic}-{log_.partition}: {half_done}"
        for row in rows:
            if row.state == S.COPY_SEGMENT_FINISHED:
                expected |= {o.key for o in store.segment_objects(row.segment_id)}
    assert bucket_keys(settings) == expected


def assert_all_eligible_copied(settings: Settings, topics: set[str]) -> None:
    """Every segment Kafka's rules make eligible is FINISHED, once, and nothing else is live."""
    for log_, rows in segment_rows(settings, topics):
        live = [(r.start_offset, r.end_offset, r.state) for r in rows if r.state in LIVE]
        wanted = [(start, end, S.COPY_SEGMENT_FINISHED) for start, end in eligible(log_)]
        assert live == wanted, f"{log_.topic}-{log_.partition}"
    assert_consistent(settings, topics)


def copied_once(settings: Settings, topics: set[str]) -> bool:
    """Whether every segment Kafka's rules make eligible has been copied at some point."""
    for log_, rows in segment_rows(settings, topics):
        done = {(r.start_offset, r.end_offset) for r in rows if r.state in COPIED_ONCE}
        if not set(eligible(log_)) <= done:
            return False
    return True


def bucket_keys(settings: Settings) -> set[str]:
    bucket = Path(settings.remote_storage)
    return {p.relative_to(bucket).as_posix() for p in bucket.rglob("*") if p.is_file()}


def test_triggered_segment_copy_tiers_every_eligible_segment(airflow, settings, fresh):
    unpause(airflow.api, "segment_copy")
    conf = {"requested_by": "e2e", "reason": "first copy of orders"}
    run = trigger(airflow.api, "segment_copy", conf)
    assert run["conf"] == conf and run["run_type"] == "manual"

    wait_for_run(airflow.api, "segment_copy", run["dag_run_id"], timeout_s=120)

    assert_all_eligible_copied(settings, {FIRST_TOPIC})
    assert bucket_keys(settings), "the copy uploaded objects"


def test_task_failed_by_storage_then_cleared_by_on_call_reruns_clean(airflow, settings, fresh):
    bucket = Path(settings.remote_storage)
    saved = bucket.with_name("bucket.saved")
    register(open_store(settings), settings, SECOND_TOPIC)  # new work: payments is tiered too
    unpause(airflow.api, "segment_copy")
    bucket.rename(saved)
    bucket.write_text("storage is down\n")  # even root cannot create objects under a file
    try:
        run_id = trigger(airflow.api, "segment_copy", {"reason": "storage outage"})["dag_run_id"]
        failed = wait_for_failed_tries(airflow.api, "segment_copy", run_id)
        print("failed while the bucket was down:\n" + describe_tasks(failed))
    finally:
        bucket.unlink()
        saved.rename(bucket)

    # On-call: storage is back; clear the failed tasks and what runs after them. Clearing also
    # skips the wait for the next retry (30 s, doubling). only_failed would not do here: the
    # downstream tasks (trigger rule all_done) would not rerun, leaving COPY_SEGMENT_STARTED.
    cleared = airflow.api.post(
        "/api/v2/dags/segment_copy/clearTaskInstances",
        {
            "dry_run": False,
            "dag_run_id": run_id,
            "task_ids": [[ti["task_id"], ti["map_index"]] for ti in failed],
            "include_downstream": True,
            "only_failed": False,
            "note": "bucket restored; cleared by on-call",
        },
    )
    cleared_ids = {(ti["task_id"], ti["map_index"]) for ti in cleared["task_instances"]}
    assert {(ti["task_id"], ti["map_index"]) for ti in failed} <= cleared_ids

    wait_for_run(airflow.api, "segment_copy", run_id, timeout_s=120)

    rerun = {
        (ti["task_id"], ti["map_index"]): ti
        for ti in task_instances(airflow.api, "segment_copy", run_id)
    }
    for ti in failed:
        again = rerun[(ti["task_id"], ti["map_index"])]
        assert again["state"] == "success" and again["try_number"] > ti["try_number"]
    assert_all_eligible_copied(settings, {FIRST_TOPIC, SECOND_TOPIC})


def test_three_night_backfill_of_retention_expiry(airflow, settings, copied):
    unpause(airflow.api, "retention_expiry")
    first = (datetime.now(UTC) - timedelta(days=5)).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    body = {
        "dag_id": "retention_expiry",
        "from_date": first.isoformat(),
        "to_date": (first + timedelta(days=3)).isoformat(),
        # One night at a time, in order, as the DAG's own max_active_runs=1 intends; the
        # backfill's max_active_runs (default 10) would otherwise take precedence.
        "max_active_runs": 1,
        "reprocess_behavior": "none",
    }
    planned = airflow.api.post("/api/v2/backfills/dry_run", body)["backfills"]
    assert len(planned) == 3, planned

    backfill = airflow.api.post("/api/v2/backfills", body)

    def runs() -> list[dict]:
        found = airflow.api.get(
            "/api/v2/dags/retention_expiry/dagRuns", run_type=["backfill"], limit=100
        )
        return found["dag_runs"]

    wait_until(
        "the backfill to complete",
        lambda: airflow.api.get(f"/api/v2/backfills/{backfill['id']}")["completed_at"],
        timeout_s=150,
        explain=lambda: "\n".join(f"{r['dag_run_id']}: {r['state']}" for r in runs()),
    )
    nights = sorted(runs(), key=lambda r: r["logical_date"])
    assert [r["state"] for r in nights] == ["success"] * 3, nights
    assert len({r["logical_date"] for r in nights}) == 3
    for earlier, later in itertools.pairwise(nights):
        assert earlier["end_date"] <= later["start_date"], "nights ran one after the other"
    assert_consistent(settings, {FIRST_TOPIC, SECOND_TOPIC})
    states = {r.state for _, rows in segment_rows(settings, {FIRST_TOPIC}) for r in rows}
    assert S.DELETE_SEGMENT_FINISHED in states, "weeks-old segments expired remotely"


def test_a_dry_run_triggered_from_the_ui_has_no_logical_date_and_changes_nothing(
    airflow, settings, copied
):
    """The UI's Trigger button makes a run without a logical date (so no data interval):
    retention must take "now" from the run itself."""
    before = {
        (r.segment_id, r.state)
        for _, rows in segment_rows(settings, {FIRST_TOPIC, SECOND_TOPIC})
        for r in rows
    }
    unpause(airflow.api, "retention_expiry")
    run = trigger(airflow.api, "retention_expiry", {"dry_run": True})
    assert run["logical_date"] is None
    wait_for_run(airflow.api, "retention_expiry", run["dag_run_id"], timeout_s=120)
    after = {
        (r.segment_id, r.state)
        for _, rows in segment_rows(settings, {FIRST_TOPIC, SECOND_TOPIC})
        for r in rows
    }
    assert after == before


def test_partition_restore_from_the_form_dry_run_first(airflow, settings, fresh, tmp_path):
    """The restore's form as the UI submits it: the dry run (its default) plans and writes
    nothing; switched off, the topic's partitions come back as the broker wrote them. Orders
    is tiered first: retention in the other tests may have expired every remote segment."""
    unpause(airflow.api, "segment_copy")
    copy = trigger(airflow.api, "segment_copy", {"reason": "tier orders to restore it"})
    wait_for_run(airflow.api, "segment_copy", copy["dag_run_id"], timeout_s=120)
    target = tmp_path / "restored"
    unpause(airflow.api, "partition_restore")
    form = {"topic": FIRST_TOPIC, "to": str(target)}
    dry = trigger(airflow.api, "partition_restore", form)
    assert wait_for_run(airflow.api, "partition_restore", dry["dag_run_id"]) == "success"
    states = {
        ti["task_id"]: ti["state"]
        for ti in task_instances(airflow.api, "partition_restore", dry["dag_run_id"])
    }
    assert states.pop("plan_restore") == "success"
    assert set(states.values()) == {"skipped"}, states
    planned = xcom_value(
        airflow.api, "partition_restore", dry["dag_run_id"], "plan_restore", key="batch"
    )
    assert planned["dry_run"] and [p["partition"] for p in planned["partitions"]] == [
        f"{FIRST_TOPIC}-0",
        f"{FIRST_TOPIC}-1",
    ]
    assert not target.exists(), "a dry run writes nothing"
    real = trigger(airflow.api, "partition_restore", {**form, "dry_run": False})
    assert wait_for_run(airflow.api, "partition_restore", real["dag_run_id"]) == "success"
    store = open_store(settings)
    for log_ in partition_logs(settings.log_dirs):
        if log_.topic == FIRST_TOPIC:
            assert_restored_as_written(store, log_, target)
    events = store.events(topic_id=store.topic(FIRST_TOPIC).topic_id, entity="restore")
    assert {e.partition for e in events if str(target) in e.details} == {0, 1}


def test_ui_lists_the_dags_without_import_errors(airflow, tmp_path):
    if shutil.which("chromium") is None:
        pytest.fail("Debian's chromium is not installed: `make test-servers` installs it")
    assert airflow.import_errors() == []
    shot = tmp_path / "airflow-dags.png"
    text = browser.screenshot(
        f"{airflow.url}/dags",
        shot,
        login=("admin", airflow.password),
        wait_for=DAG_IDS,
        click='button[aria-label="Show table view"]',  # all six DAGs fit on one screen
    )
    assert "segment_copy" in text
    summary = summarize_png(shot)
    assert (summary.width, summary.height) == (browser.WIDTH, browser.HEIGHT)
    assert summary.colours > 50, "the screenshot is (nearly) blank"
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, SCREENSHOT)
    print(f"screenshot of the DAG list: {SCREENSHOT}")


def test_servers_listen_on_loopback_only_and_stop_cleanly(airflow):
    """Stops the module's Airflow: the `airflow` fixture starts it again for any later test."""
    listening = {
        (conn.laddr.ip, conn.laddr.port)
        for process in airflow.leftovers()
        for conn in _listening(process)
    }
    assert ("127.0.0.1", airflow.port) in listening
    assert {ip for ip, _ in listening} == {"127.0.0.1"}, listening

    airflow.stop()
    assert airflow.leftovers() == []
    # Airflow's components and the browser, by what they run: a long-lived helper of another
    # test (a multiprocessing fork server) may carry "airflow" in its arguments (sys.path).
    ours = psutil.Process().children(recursive=True)
    left = [
        p
        for p in ours
        if p.status() != psutil.STATUS_ZOMBIE and _is_airflow_or_browser(_cmdline(p))
    ]
    assert left == [], [(p.pid, _cmdline(p)) for p in left]


def _listening(process: psutil.Process) -> list:
    try:
        return [c for c in process.net_connections("inet") if c.status == psutil.CONN_LISTEN]
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []


def _is_airflow_or_browser(cmdline: list[str]) -> bool:
    program = Path(cmdline[0].split(" ")[0]).name if cmdline else ""
    servers = ("gunicorn", "uvicorn", "chromium", "chrome")
    return is_airflow_process(cmdline) or any(program.startswith(s) for s in servers)


def _cmdline(process: psutil.Process) -> list[str]:
    try:
        return process.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return []
