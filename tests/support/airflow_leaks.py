"""Checks that an Airflow run leaked no credentials and copied every segment, for the DAG tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.moto_server import ACCESS_KEY_ID, SECRET_ACCESS_KEY, SESSION_TOKEN
from tests.support.tiered import Tiered, eligible
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

SECRETS = (SECRET_ACCESS_KEY, SESSION_TOKEN, ACCESS_KEY_ID)


def airflow_rows(airflow_home: Path, table: str) -> list[tuple]:
    with sqlite3.connect(airflow_home / "airflow.db") as db:
        return db.execute(f"SELECT * FROM {table}").fetchall()


def assert_leaked_nowhere(
    secrets: tuple[str, ...], log_text: str, airflow_home: Path, root: Path
) -> None:
    """No secret in the run's log, its XComs and rendered fields, or any file under ``root``."""
    traces = repr(airflow_rows(airflow_home, "xcom")) + repr(
        airflow_rows(airflow_home, "rendered_task_instance_fields")
    )
    for secret in secrets:
        assert secret not in log_text and secret not in traces
        assert files_containing(root, secret) == []


def copied_keys(t: Tiered) -> set[str]:
    """The keys of every segment the run copied, after checking that each eligible segment is
    FINISHED and reads back from the bucket identical to the broker's."""
    keys: set[str] = set()
    for log_ in t.logs():
        topic = t.store.topic(log_.topic)
        states = [S.COPY_SEGMENT_FINISHED]
        finished = t.store.segments(topic.topic_id, log_.partition, states=states)
        assert [(r.start_offset, r.end_offset) for r in finished] == eligible(log_)
        keys |= {o.key for r in finished for o in t.store.segment_objects(r.segment_id)}
        checks = verify_partition(log_, topic, t.store, t.rsm)  # read back from the bucket
        assert checks and all(check.identical for check in checks), checks
    return keys


def files_containing(root: Path, secret: str) -> list[Path]:
    needle = secret.encode()
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]
