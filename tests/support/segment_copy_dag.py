"""Running the segment_copy DAG in Airflow, and the live segments it leaves, for the DAG tests."""

from __future__ import annotations

from pathlib import Path

from dev.airflow_local import run_dag_in_subprocess
from tests.support.tiered import Tiered
from tierflow.metadata.states import RemoteLogSegmentState as S

PROJECT = Path(__file__).resolve().parents[2]


def run_dag(base: Path, env: dict[str, str], name: str) -> str:
    return run_dag_in_subprocess(
        "segment_copy",
        project=PROJECT,
        airflow_home=base / "airflow",
        extra_env=env,
        log_file=base / f"{name}.log",
    )


def live_segments(t: Tiered, topic: str, partition: int) -> list[tuple[int, int, str]]:
    topic_id = t.store.topic(topic).topic_id
    rows = t.store.segments(topic_id, partition)
    return [
        (r.start_offset, r.end_offset, r.state)
        for r in rows
        if r.state != S.DELETE_SEGMENT_FINISHED
    ]
