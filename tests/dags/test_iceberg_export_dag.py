"""The iceberg_export DAG run by Airflow itself (dag.test), its catalog on SQLite, on
PostgreSQL and behind Iceberg's REST catalog server (an Airflow Iceberg connection): a dry run
writes nothing; a run exports through Spark (one task per partition) and commits once, the
table holding the committed records kafka-python reads; a run with nothing new commits
nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.iceberg_rest import connection_env
from tests.support.iceberg_rows import assert_holds_committed
from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered
from tierflow.cli import main
from tierflow.export.catalog import settings_catalog
from tierflow.export.table import existing_table

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["sqlite", "postgresql", "rest"])
def catalog_kind(request: pytest.FixtureRequest) -> str:
    """The Iceberg catalog: the store's database (embedded, or the PostgreSQL server), or the
    REST catalog server (the store on SQLite)."""
    return request.param


def test_an_export_run_through_airflow(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    catalog_kind: str,
) -> None:
    db_url = f"sqlite:///{tmp_path / 'tierflow.db'}"
    if catalog_kind == "postgresql":
        db_url = request.getfixturevalue("postgres_url")
    t = build_tiered(
        tmp_path / "data", layout="chunked-encrypted", spark_threshold_bytes=1, db_url=db_url
    )
    use_settings(monkeypatch, t.settings)
    assert main(["topics", "register", "orders", "--config", "tierflow.iceberg.export=true"]) == 0
    assert main(["copy", "--owner", "test", "--no-spark"]) == 0
    os.environ.pop("TIERFLOW_CRASH_AT", None)
    settings, extra_env = t.settings, t.settings.as_env()
    if catalog_kind == "rest":
        settings = settings.updated(iceberg_catalog="lake")
        conn = connection_env("lake", request.getfixturevalue("iceberg_rest").uri)
        extra_env = {**settings.as_env(), **conn}
        for name, value in conn.items():
            monkeypatch.setenv(name, value)

    def run(name: str, **conf: object) -> str:
        return run_dag_in_subprocess(
            "iceberg_export",
            project=PROJECT,
            airflow_home=tmp_path / "airflow",
            extra_env=extra_env,
            log_file=tmp_path / f"{name}.log",
            run_conf=conf,
        )

    catalog = settings_catalog(settings)
    engine = getattr(catalog, "engine", None)
    kind = engine.dialect.name if engine is not None else catalog.properties["type"]
    assert kind == ("rest" if catalog_kind == "rest" else t.store.engine.dialect.name)
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
