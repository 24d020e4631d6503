"""The iceberg_export DAG run by Airflow itself against the S3 test server: Spark executors
write the Parquet files into the bucket through the handed-over client, pyiceberg commits the
table's metadata there through the same Airflow connection, and a run that never committed
has its files deleted. The table reads back from S3 as kafka-python reads the segments, and
the connection's credentials are nowhere in the run's log, XComs, rendered fields or files
(the catalog's database among them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.airflow_leaks import SECRETS, assert_leaked_nowhere
from tests.support.iceberg_rows import assert_holds_committed
from tests.support.moto_server import MotoServer
from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.export.catalog import settings_catalog
from tierflow.export.table import existing_table

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
TABLE_KEY = "exp/iceberg/kafka.db/orders"


def test_an_export_run_into_s3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moto_server: MotoServer, s3_bucket: str
) -> None:
    t = build_tiered(
        tmp_path / "data",
        layout="chunked-encrypted",
        remote_storage=f"s3://{s3_bucket}/exp",
        spark_threshold_bytes=1,
    )
    use_settings(monkeypatch, t.settings)
    assert main(["topics", "register", "orders", "--config", "tierflow.iceberg.export=true"]) == 0
    assert main(["copy", "--owner", "test", "--no-spark"]) == 0
    s3 = moto_server.client()
    orphan = f"{TABLE_KEY}/data/run-killed-before-commit/0-00000000000000000000-0.parquet"
    s3.put_object(Bucket=s3_bucket, Key=orphan, Body=b"a file no snapshot references")

    airflow_home, log_file = tmp_path / "airflow", tmp_path / "iceberg_export.log"
    state = run_dag_in_subprocess(
        "iceberg_export",
        project=PROJECT,
        airflow_home=airflow_home,
        extra_env={**t.settings.as_env(), **moto_server.connection_env()},
        log_file=log_file,
    )
    log_text = log_file.read_text()
    assert state == "success", log_text[-3000:]
    assert "from 2 partitions (0 failed)" in log_text, "Spark wrote the files"

    table = existing_table(settings_catalog(t.settings), "orders")
    assert table is not None and table.location() == f"s3://{s3_bucket}/{TABLE_KEY}"
    assert_holds_committed(table, [t.log("orders", 0), t.log("orders", 1)])
    listed = s3.list_objects_v2(Bucket=s3_bucket, Prefix=f"{TABLE_KEY}/")["Contents"]
    keys = {item["Key"] for item in listed}
    assert orphan not in keys, "the files of a run that never committed are deleted"
    data = {k for k in keys if k.startswith(f"{TABLE_KEY}/data/")}
    assert data and {f"s3://{s3_bucket}/{k}" for k in data} == {
        task.file.file_path for task in table.scan().plan_files()
    }
    assert any(k.startswith(f"{TABLE_KEY}/metadata/") for k in keys), "metadata in S3 too"

    assert_leaked_nowhere(SECRETS, log_text, airflow_home, tmp_path)
