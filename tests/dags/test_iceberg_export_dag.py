"""The iceberg_export DAG run by Airflow itself (dag.test), its catalog on SQLite and on
PostgreSQL: a dry run writes nothing; a run exports through Spark (one task per partition)
and commits once, the table holding the committed records kafka-python reads; a run with
nothing new commits nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.iceberg_rows import assert_holds_committed
from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.export.catalog import settings_catalog
from tierflow.export.table import existing_table

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The metadata store, and so the Iceberg catalog: embedded, or on the PostgreSQL server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'tierflow.db'}"
    return request.getfixturevalue("postgres_url")


def test_an_export_run_through_airflow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db_url: str
) -> None:
    t = build_tiered(
        tmp_path / "data", layout="chunked-encrypted", spark_threshold_bytes=1, db_url=db_url
    )
    use_settings(monkeypatch, t.settings)
    assert main(["topics", "register", "orders", "--config", "tierflow.iceberg.export=true"]) == 0
    assert main(["copy", "--owner", "test", "--no-spark"]) == 0
    os.environ.pop("TIERFLOW_CRASH_AT", None)

    def run(name: str, **conf: object) -> str:
        return run_dag_in_subprocess(
            "iceberg_export",
            project=PROJECT,
            airflow_home=tmp_path / "airflow",
            extra_env=t.settings.as_env(),
            log_file=tmp_path / f"{name}.log",
            run_conf=conf,
        )

    catalog = settings_catalog(t.settings)
    assert catalog.engine.dialect.name == t.store.engine.dialect.name, "the store's database"
    assert run("dry", dry_run=True) == "success"
    assert "dry run: would export orders-0 from offset 0" in (tmp_path / "dry.log").read_text()
    assert existing_table(catalog, "orders") is None, "a dry run creates nothing"
    assert run("spark") == "success"
    spark_log = (tmp_path / "spark.log").read_text()
    assert "spark-submit --master local[*]" in spark_log
    assert "from 2 partitions (0 failed)" in spark_log
    table = existing_table(catalog, "orders")
    assert_holds_committed(table, [t.log("orders", 0), t.log("orders", 1)])
    assert run("again") == "success"
    assert len(existing_table(catalog, "orders").snapshots()) == 1, "nothing new: no commit"
