"""The remote_scrub DAG run by Airflow itself: a manual run is a dry run that finds the damaged
object, repairs nothing and turns red; a run with the dry run off copies the segment again
from the broker's identical file and deletes the damaged copy; a worker SIGKILLed between the
two is finished by the next run.

Oracles: the object damaged by hand, and the broker's local file the new copy must read as.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.scrub_finding import flip_log_object, local_file
from tests.support.tiered import Tiered, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.segment_refs import remote_segment

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def run_dag(t: Tiered, name: str, conf: dict | None = None, **env: str) -> str:
    os.environ.pop("TIERFLOW_CRASH_AT", None)
    return run_dag_in_subprocess(
        "remote_scrub",
        project=PROJECT,
        airflow_home=t.settings.data_dir / "airflow",
        extra_env={**t.settings.as_env(), **env},
        log_file=t.settings.data_dir / f"{name}.log",
        run_conf=conf,
    )


def damaged(tmp_path: Path) -> tuple[Tiered, RemoteLogSegment]:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    row = t.store.scrub_queue(limit=1)[0]
    flip_log_object(t, row.segment_id)
    return t, row


def assert_repaired(t: Tiered, row: RemoteLogSegment) -> None:
    assert t.store.segment(row.segment_id).state == S.DELETE_SEGMENT_FINISHED
    finished = t.store.segments(row.topic_id, row.partition, states=[S.COPY_SEGMENT_FINISHED])
    spans = [(r.start_offset, r.end_offset) for r in finished]
    assert spans.count((row.start_offset, row.end_offset)) == 1
    (new,) = [r for r in finished if r.start_offset == row.start_offset]
    topic = t.store.topic_by_id(row.topic_id)
    read_back = b"".join(t.rsm.iter_log_segment(remote_segment(topic, new)))
    assert read_back == local_file(t, row).read_bytes()
    assert t.store.open_findings() == []


def test_a_manual_run_finds_and_only_says_then_a_real_run_repairs(tmp_path: Path) -> None:
    t, row = damaged(tmp_path)
    assert run_dag(t, "dry") == "failed", "red while a finding is open"
    log_text = (t.settings.data_dir / "dry.log").read_text(errors="replace")
    assert f"segment {row.segment_id}: would be recopied" in log_text
    assert t.store.segment(row.segment_id).state == S.COPY_SEGMENT_FINISHED
    assert [f.segment_id for f in t.store.open_findings()] == [row.segment_id]

    assert run_dag(t, "apply", {"dry_run": False}) == "success"
    assert_repaired(t, row)


def test_a_worker_killed_mid_repair_is_finished_by_the_next_run(tmp_path: Path) -> None:
    t, row = damaged(tmp_path)
    with pytest.raises(RuntimeError, match="did not complete"):
        run_dag(t, "killed", {"dry_run": False}, TIERFLOW_CRASH_AT="repair.after_recopy")
    assert t.store.segment(row.segment_id).state == S.COPY_SEGMENT_FINISHED, "killed before"
    assert run_dag(t, "next", {"dry_run": False}) == "success"
    assert "replaced" in (t.settings.data_dir / "next.log").read_text(errors="replace")
    assert_repaired(t, row)


def test_the_dag_is_wired_as_the_issue_asks() -> None:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(PROJECT / "dags"))
    dag = bag.dags["remote_scrub"]
    assert dag.timetable.expression == "20 * * * *" and dag.max_active_runs == 1
    assert set(dag.params) == {"budget_bytes", "dry_run"}
    assert dag.params["dry_run"] is True, "a manual trigger changes nothing by default"
    assert dag.get_task("scrub").pool == "tierflow_scrub"
    repair = dag.get_task("repair")
    assert (repair.pool, repair.queue) == ("tierflow_scrub", "default")
