"""The topic_disablement DAG run by Airflow: Kafka's DisableRemoteLogOnTopicTest and
EnableRemoteLogOnTopicTest, step by step, with every config change made through the DAG's
form (run conf) and the copy itself standing in for the offloading broker."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dev.airflow_local import airflow_env, run_dag_in_subprocess
from tests.disablement.support import bucket_files, clock, copy, copy_first, live, live_keys
from tests.support.tiered import NOW_MS, Tiered, build_tiered, eligible
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.disablement import request_disable
from tierflow.lifecycle.retention.remote import execute_remote_retention, plan_partition_retention
from tierflow.metadata.states import TieredState
from tierflow.read.fetch import FetchRequest, OffsetOutOfRangeError, fetch_remote
from tierflow.tasks.attribution import task_instance_of

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def trigger(t: Tiered, name: str, **conf: str) -> str:
    return run_dag_in_subprocess(
        "topic_disablement",
        project=PROJECT,
        airflow_home=t.settings.data_dir / "airflow",
        extra_env=t.settings.as_env(),
        log_file=t.settings.data_dir / f"{name}.log",
        # A manual trigger is dry unless told otherwise (it matters for disable/delete).
        run_conf={"topic": "orders", "dry_run": False, **conf},
    )


def log_text(t: Tiered, name: str) -> str:
    return (t.settings.data_dir / f"{name}.log").read_text(errors="replace")


def local_files(t: Tiered) -> dict[str, str]:
    return {
        str(seg.log_path): hashlib.sha256(seg.log_path.read_bytes()).hexdigest()
        for log_ in t.logs()
        for seg in log_.segments()
    }


def readable_from(t: Tiered, partition: int, offset: int) -> bool:
    fetched = fetch_remote(t.store, t.rsm, FetchRequest("orders", partition, offset=offset))
    return bool(fetched.batches) and fetched.first_offset <= offset


def check_attributed_to_the_run(t: Tiered, topic_id: str) -> None:
    """ENABLED -> DISABLING (request) -> DISABLED (complete): each event names the task instance
    that wrote it, and the Tiered storage page's lookup finds that run in this Airflow's DB (and
    not one it never had)."""
    moves = [
        e
        for e in t.store.events(topic_id=topic_id, entity="topic")
        if e.to_state in (TieredState.DISABLING, TieredState.DISABLED)
    ]
    tis = [task_instance_of(e.actor) for e in moves]
    assert all(tis), [e.actor for e in moves]
    assert [(ti.dag_id, ti.task_id) for ti in tis] == [  # type: ignore[union-attr]
        ("topic_disablement", "request"),
        ("topic_disablement", "complete"),
    ]
    (run_id,) = {ti.run_id for ti in tis}  # type: ignore[union-attr]
    ours, elsewhere = ("topic_disablement", run_id), ("topic_disablement", "manual__elsewhere")
    code = (
        "import json, sys; from tierflow.operator_view.airflow_runs import airflow_runs; "
        "print(json.dumps(sorted(airflow_runs({tuple(p) for p in json.loads(sys.argv[1])}))))"
    )
    env = {**os.environ, **airflow_env(PROJECT, t.settings.data_dir / "airflow")}
    found = subprocess.run(
        [sys.executable, "-c", code, json.dumps([ours, elsewhere])],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert json.loads(found.stdout.strip().splitlines()[-1]) == [list(ours)]


def test_disable_remote_log_on_topic(tmp_path: Path) -> None:
    """DisableRemoteLogOnTopicTest: retain -> re-enable -> retain -> DeleteRecords -> delete."""
    t = build_tiered(tmp_path)
    log0 = t.log("orders", 0)
    wanted = eligible(log0)
    assert len(wanted) >= 2
    copy_first(t, log0, 1)
    copy(t, t.log("orders", 1))
    local_before = local_files(t)
    assert readable_from(t, 0, 0) and readable_from(t, 1, 0)

    # Copy disabled, data kept: still readable from tier 2, nothing more offloaded.
    assert trigger(t, "retain", action="disable", policy="retain") == "success"
    topic = t.store.topic("orders")
    assert (topic.state, topic.remote_log_disable_policy, topic.tiered_epoch) == (
        TieredState.DISABLED,
        "retain",
        1,
    )
    assert readable_from(t, 0, 0)
    assert copy(t, log0) == []
    check_attributed_to_the_run(t, topic.topic_id)

    # Copy enabled again: offload resumes after the highest remote offset, in the new epoch.
    assert trigger(t, "enable", action="enable") == "success"
    assert t.store.topic("orders").tiered_epoch == 2
    assert copy(t, log0) == wanted[1:]
    assert [r.tiered_epoch for r in live(t, "orders", 0)] == [0] + [2] * (len(wanted) - 1)

    # Copy disabled again: still readable.
    assert trigger(t, "retain-again", action="disable", policy="retain") == "success"
    assert readable_from(t, 0, wanted[-1][0])

    # DeleteRecords past the first segment: remote retention deletes it though copy is off.
    topic = t.store.topic("orders")
    t.store.advance_log_start_offset(topic.topic_id, 0, wanted[1][0], actor="test", now_ms=NOW_MS)
    partition = t.store.partition(topic.topic_id, 0)
    plan = plan_partition_retention(t.store, topic, partition, now_ms=NOW_MS)
    report = execute_remote_retention(plan, t.store, t.rsm, actor="test", clock=clock)
    assert len(report.deleted) == 1
    assert [(r.start_offset, r.end_offset) for r in live(t, "orders", 0)] == wanted[1:]

    # Remote storage off with delete: tier 2 empty, reads below the local start out of range.
    assert trigger(t, "delete", action="disable", policy="delete") == "success"
    topic = t.store.topic("orders")
    assert (topic.state, topic.remote_log_disable_policy) == (TieredState.DISABLED, "delete")
    assert live(t, "orders", 0) == live(t, "orders", 1) == []
    assert not any(key.startswith("orders-") for key in bucket_files(t))
    assert bucket_files(t) == live_keys(t)  # payments untouched
    for p in (0, 1):
        local_start = t.store.partition(topic.topic_id, p).local_log_start_offset
        assert t.store.partition(topic.topic_id, p).log_start_offset == local_start
        with pytest.raises(OffsetOutOfRangeError):
            fetch_remote(t.store, t.rsm, FetchRequest("orders", p, offset=0))
    assert local_files(t) == local_before  # local data still consumable, byte for byte


def test_enable_remote_log_on_topic(tmp_path: Path) -> None:
    """EnableRemoteLogOnTopicTest: created with tiering off, data produced, then enabled."""
    t = build_tiered(tmp_path, enable=False)
    orders = [log_ for log_ in t.logs() if log_.topic == "orders"]
    assert all(copy(t, log_) == [] for log_ in orders)
    assert trigger(t, "enable", action="enable") == "success"
    topic = t.store.topic("orders")
    assert (topic.state, topic.tiered_epoch) == (TieredState.ENABLED, 1)
    for log_ in orders:
        assert copy(t, log_) == eligible(log_) != []
        assert readable_from(t, log_.partition, log_.segments()[0].base_offset)


def test_second_request_is_rejected_and_an_interrupted_one_resumed(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    for log_ in t.logs():
        copy(t, log_)
    # A request whose run died before completing: DISABLING with delete, nothing working on it.
    request_disable(t.store, "orders", policy="delete", actor="dead-run", now_ms=NOW_MS)
    events, objects = len(t.store.events()), bucket_files(t)

    assert trigger(t, "conflicting", action="disable", policy="retain") == "failed"
    assert "TIERED_STORAGE_DISABLEMENT_IN_PROGRESS" in log_text(t, "conflicting")
    assert (len(t.store.events()), bucket_files(t)) == (events, objects)

    topic = t.store.topic("orders")
    t.store.acquire_lease(topic.topic_id, 0, "live-copy", now_ms=wall_clock_ms(), ttl_ms=600_000)
    assert trigger(t, "while-busy", action="disable", policy="delete") == "failed"
    assert "TIERED_STORAGE_DISABLEMENT_IN_PROGRESS" in log_text(t, "while-busy")
    t.store.release_lease(topic.topic_id, 0, "live-copy")

    assert trigger(t, "resume", action="disable", policy="delete") == "success"
    assert "resuming the interrupted disablement" in log_text(t, "resume")
    assert t.store.topic("orders").state is TieredState.DISABLED
    assert live(t, "orders", 0) == live(t, "orders", 1) == []
    assert bucket_files(t) == live_keys(t)


def test_disable_with_delete_is_a_dry_run_by_default(tmp_path: Path) -> None:
    t = build_tiered(tmp_path)
    for log_ in t.logs():
        copy(t, log_)
    events, objects = len(t.store.events()), bucket_files(t)
    state = run_dag_in_subprocess(
        "topic_disablement",
        project=PROJECT,
        airflow_home=t.settings.data_dir / "airflow",
        extra_env=t.settings.as_env(),
        log_file=t.settings.data_dir / "default.log",
        run_conf={"topic": "orders", "action": "disable", "policy": "delete"},  # no dry_run
    )
    assert state == "success"
    assert "would delete all its remote data" in log_text(t, "default")
    assert (len(t.store.events()), bucket_files(t)) == (events, objects)
    assert t.store.topic("orders").state is TieredState.ENABLED


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        pytest.param(
            {"action": "disable", "policy": "archive"}, "archive", id="unknown-policy-archive"
        ),
        pytest.param({"action": "pause"}, "pause", id="unknown-action-pause"),
        pytest.param({"topic": "no-such-topic"}, "no-such-topic", id="unknown-topic"),
    ],
)
def test_invalid_requests_change_nothing(tmp_path: Path, conf: dict, message: str) -> None:
    t = build_tiered(tmp_path)
    events = len(t.store.events())
    try:
        state = trigger(t, "invalid", **conf)
    except RuntimeError:  # the form's validation refused the run before it started
        state = "refused"
    assert state in ("failed", "refused")
    assert message in log_text(t, "invalid")
    assert len(t.store.events()) == events
    assert t.store.topic("orders").state is TieredState.ENABLED


@pytest.mark.parametrize("kill_at", ["disable.after_log_start", "delete.after_storage_delete#2"])
def test_killed_while_disabling_then_triggered_again(tmp_path: Path, kill_at: str) -> None:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    for log_ in t.logs():
        copy(t, log_)
    crashing = {**t.settings.as_env(), "TIERFLOW_CRASH_AT": kill_at}
    with pytest.raises(RuntimeError, match="did not complete"):
        run_dag_in_subprocess(
            "topic_disablement",
            project=PROJECT,
            airflow_home=t.settings.data_dir / "airflow",
            extra_env=crashing,
            log_file=t.settings.data_dir / "killed.log",
            run_conf={"topic": "orders", "action": "disable", "policy": "delete", "dry_run": False},
        )
    assert t.store.topic("orders").state is TieredState.DISABLING
    os.environ.pop("TIERFLOW_CRASH_AT", None)
    assert trigger(t, "again", action="disable", policy="delete") == "success"
    assert t.store.topic("orders").state is TieredState.DISABLED
    assert live(t, "orders", 0) == live(t, "orders", 1) == []
    assert bucket_files(t) == live_keys(t)  # no orphaned object of orders
