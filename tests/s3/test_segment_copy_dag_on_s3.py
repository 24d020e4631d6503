"""The segment_copy DAG, run by Airflow itself, uploading to S3 from Spark executors; then
partition_restore, its Spark executors reading the segments back from S3.

The Airflow connection carries recognisable fake credentials; after the run, they must be
nowhere: not in Airflow's log of the run (which holds the spark-submit command line the Spark
hook logs), not in XComs or rendered template fields, not in any file the run left behind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.airflow_leaks import (
    SECRETS,
    airflow_rows,
    assert_leaked_nowhere,
    copied_keys,
    files_containing,
)
from tests.support.moto_server import MotoServer
from tests.support.restored import assert_restored_as_written
from tests.support.tiered import build_tiered, eligible

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def test_spark_rewrites_into_s3_and_the_credentials_leak_nowhere(
    tmp_path: Path, moto_server: MotoServer, s3_bucket: str
):
    t = build_tiered(
        tmp_path,
        layout="chunked-encrypted",
        remote_storage=f"s3://{s3_bucket}/dag-run",
        spark_threshold_bytes=1,
    )
    airflow_home = tmp_path / "airflow"
    log_file = tmp_path / "segment_copy.log"
    state = run_dag_in_subprocess(
        "segment_copy",
        project=PROJECT,
        airflow_home=airflow_home,
        extra_env={**t.settings.as_env(), **moto_server.connection_env()},
        log_file=log_file,
    )
    log_text = log_file.read_text()
    assert state == "success", log_text[-3000:]

    expected = sum(len(eligible(log_)) for log_ in t.logs())
    assert f"rewrote {expected} of {expected} segments" in log_text, "Spark did the upload"
    submit = [line for line in log_text.splitlines() if "Spark-Submit cmd:" in line]
    assert submit and "--master local[*]" in submit[0]
    assert airflow_rows(airflow_home, "xcom")
    assert airflow_rows(airflow_home, "rendered_task_instance_fields")
    assert_leaked_nowhere(SECRETS, log_text, airflow_home, tmp_path)

    keys = copied_keys(t)
    stored = moto_server.client().list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert {item["Key"] for item in stored} == {f"dag-run/{key}" for key in keys}

    # The way back: partition_restore's Spark job reads the segments from S3, and the
    # credentials stay out of its run too.
    target, restore_log = tmp_path / "restored", tmp_path / "partition_restore.log"
    state = run_dag_in_subprocess(
        "partition_restore",
        project=PROJECT,
        airflow_home=airflow_home,
        extra_env={**t.settings.as_env(), **moto_server.connection_env()},
        log_file=restore_log,
        run_conf={"topic": "orders", "to": str(target), "dry_run": False},
    )
    restore_text = restore_log.read_text()
    assert state == "success", restore_text[-3000:]
    assert "restored 5 of 5 segments (0 failed)" in restore_text, "Spark wrote every segment"
    for log_ in (t.log("orders", 0), t.log("orders", 1)):
        assert_restored_as_written(t.store, log_, target)
    for secret in SECRETS:
        assert secret not in restore_text
        assert files_containing(tmp_path, secret) == []
