"""After every DAG has run with real secrets configured, no secret is anywhere it should not be.

Run with the bucket on S3, on GCS and on Azure. The secrets: the AWS credentials of the
``aws_default`` connection (or the service account key of the ``google_cloud_default`` one and
the access tokens minted from it, or the account key of the ``wasb_default`` one), the PostgreSQL
password in TIERFLOW_DB_URL (the role must present it), and the private key of the key ring.
Searched for every form of each (``needles``): every file the deployment wrote (AIRFLOW_HOME
with its logs/, airflow.cfg and SQLite database, the rewrite batches, the index cache), the
captured stdout and stderr of the DAG runs (where ``dag.test()`` writes the task logs) and of
the CLI commands run afterwards, Airflow's metadata database table by table (XComs, rendered
template fields and run confs asserted non-empty), tierflow's PostgreSQL store table by table,
and every object left in the bucket. The key ring's directory is the one place the private key
belongs.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.full_run import FullRun, run_every_dag
from tests.security.needles import PG_PASSWORD, PG_USER
from tests.security.pg_role import PasswordRole, password_role
from tests.security.scan import (
    Finding,
    Haystack,
    files_under,
    find_secrets,
    rows_haystack,
    sqlalchemy_dump,
    sqlite_dump,
    sqlite_rows,
    text,
)
from tests.security.world import CloudBucket, azure_bucket, build_world, gcs_bucket, s3_bucket
from tests.support.azurite import Azurite
from tests.support.gcs_emulator import GcsEmulator
from tests.support.moto_server import MotoServer, empty_and_remove_bucket
from tests.support.postgres import PostgresServer

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

EXPECTED_STATES = {
    "segment_copy": "success",
    "index_cache": "success",
    "retention_expiry": "success",
    "topic_disablement": "success",
    "topic_disablement_refused": "failed",
    "remote_partition_removal": "success",
    "remote_reconcile": "success",
}


@pytest.fixture(scope="module", params=["s3", "gcs", "azure"])
def module_bucket(request: pytest.FixtureRequest) -> Iterator[CloudBucket]:
    """The deployment's bucket: on S3 (moto_server), GCS (the emulator) or Azure (Azurite)."""
    name = f"tierflow-sec-{uuid.uuid4().hex[:16]}"
    if request.param == "s3":
        moto: MotoServer = request.getfixturevalue("moto_server")
        moto.client().create_bucket(Bucket=name)
        yield s3_bucket(moto, name)
        empty_and_remove_bucket(moto.client(), name)
        return
    if request.param == "gcs":
        emulator: GcsEmulator = request.getfixturevalue("gcs_emulator")
        emulator.client().create_bucket(name)
        yield gcs_bucket(emulator, request.getfixturevalue("service_account"), name)
        return
    azurite: Azurite = request.getfixturevalue("azurite")
    azurite.service().create_container(name)
    yield azure_bucket(azurite, name)
    azurite.service().delete_container(name)


@pytest.fixture(scope="module")
def pg_role(postgres_server: PostgresServer, module_bucket: CloudBucket) -> Iterator[PasswordRole]:
    """The conftest's role, made again for each bucket: each world registers the same topics
    in a database of its own."""
    with password_role(postgres_server, PG_USER, PG_PASSWORD) as role:
        yield role


@pytest.fixture(scope="module")
def full_run(
    tmp_path_factory: pytest.TempPathFactory, module_bucket: CloudBucket, pg_role: PasswordRole
) -> FullRun:
    """Every DAG run once; Spark does the copy (threshold 1 byte), as in the S3 DAG test."""
    base = tmp_path_factory.mktemp("security-full-run")
    world = build_world(base, module_bucket, pg_role, spark_threshold_bytes=1)
    return run_every_dag(world)


def report(findings: list[Finding]) -> str:
    return "secrets leaked:\n" + "\n".join(f"  {f}" for f in findings[:40])


def test_every_dag_ran_and_did_its_work(full_run: FullRun):
    output = full_run.captured_output()
    assert full_run.states == EXPECTED_STATES, full_run.output()[-5000:]
    assert "Spark-Submit cmd:" in output["segment_copy"], "Spark did the copy"
    assert "rewrote 9 of 9 segments" in output["segment_copy"]
    assert "unknown topic 'no-such-topic'" in output["topic_disablement_refused"]
    for label in EXPECTED_STATES:  # dag.test() writes each task's log to its stdout
        assert "[DAG TEST] running task" in output[label], label
    assert "password authentication" not in full_run.output(), "the role's password worked"


def test_the_needles_match_the_secrets_actually_configured(
    full_run: FullRun, request: pytest.FixtureRequest
):
    """The control: each secret is found where it does belong, so finding none elsewhere
    means something. The PEM lines come from the key the run encrypted with; a minted access
    token was handed out to the run by the token endpoint."""
    world = full_run.world
    if world.bucket.minted:
        assert request.getfixturevalue("service_account").grants, "the run minted tokens"
    secrets = world.secrets()
    env = text("worker environment", json.dumps(world.env))
    found_in_env = {f.secret for f in find_secrets([env], secrets)}
    minted = {s.name for s in world.bucket.minted}
    assert found_in_env == {s.name for s in secrets} - {secrets[-1].name} - minted
    key_files = list(files_under(world.keys_dir))
    found_in_keys = {(f.secret, f.form) for f in find_secrets(key_files, [secrets[-1]])}
    assert {form for _, form in found_in_keys} == set(secrets[-1].forms) - {
        "der",
        "der-base64",  # a PEM file breaks it into lines
        "der-base64-urlsafe",
        *(f"{n}-{enc}" for n in "dpq" for enc in ("decimal", "hex", "bytes", "base64")),
    }


def test_a_secret_planted_in_airflows_database_would_be_found(full_run: FullRun, tmp_path: Path):
    """The same scan over a copy of the run's database with one XCom holding a PEM line."""
    copy = tmp_path / "airflow.db"
    shutil.copy(full_run.airflow_home / "airflow.db", copy)
    pem_line = full_run.world.secrets()[-1].forms["pem-line-9"].decode()
    with sqlite3.connect(copy) as db:
        db.execute("UPDATE xcom SET value = json_quote(?) WHERE rowid = 1", (pem_line,))
    findings = find_secrets(sqlite_dump(copy), full_run.world.secrets())
    assert {(f.place, f.form) for f in findings} >= {("airflow.db:xcom", "pem-line-9")}


def test_no_secret_in_any_file_the_run_left(full_run: FullRun):
    files = list(files_under(full_run.world.base, exclude=[full_run.world.keys_dir]))
    labels = [f.label for f in files]
    assert any(label.endswith("airflow-home/airflow.db") for label in labels)
    assert any("/rewrite-jobs/" in label for label in labels), "the Spark batch files"
    assert any("/remote-log-index-cache/" in label for label in labels)
    findings = find_secrets(files, full_run.world.secrets())
    assert findings == [], report(findings)


def test_no_secret_in_captured_output(full_run: FullRun):
    captured = full_run.captured_output()
    assert {"segment_copy", "tierflow db upgrade", "tierflow keys generate"} <= set(captured)
    haystacks = [text(label, output) for label, output in captured.items()]
    findings = find_secrets(haystacks, full_run.world.secrets())
    assert findings == [], report(findings)


def test_no_secret_in_xcoms_rendered_fields_or_run_conf(full_run: FullRun):
    db = full_run.airflow_home / "airflow.db"
    xcoms = sqlite_rows(db, "xcom")
    rendered = sqlite_rows(db, "rendered_task_instance_fields")
    confs = sqlite_rows(db, "dag_run", "dag_id, conf")
    assert len(xcoms) > 20 and rendered
    assert any("spark.pyspark.python" in str(row) for row in rendered), "spark-submit's fields"
    assert any("no-such-topic" in str(conf) for conf in confs)
    haystacks = [
        rows_haystack("xcom", xcoms),
        rows_haystack("rendered_task_instance_fields", rendered),
        rows_haystack("dag_run.conf", confs),
    ]
    findings = find_secrets(haystacks, full_run.world.secrets())
    assert findings == [], report(findings)


def test_no_secret_in_airflows_metadata_database(full_run: FullRun):
    dump = list(sqlite_dump(full_run.airflow_home / "airflow.db"))
    tables = {stack.label.split(":", 1)[-1] for stack in dump}
    assert {"xcom", "task_instance", "dag_run", "log", "serialized_dag"} <= tables
    findings = find_secrets(dump, full_run.world.secrets())
    assert findings == [], report(findings)


def test_no_secret_in_tierflows_store_or_the_bucket(full_run: FullRun):
    store = list(sqlalchemy_dump(full_run.world.settings.db_url))
    assert any(s.label == "store:metadata_events" and s.data for s in store)
    remaining = full_run.world.bucket_objects()
    assert any(key.endswith(".rsm-manifest") for key in remaining), "orders' segments stay"
    objects = [Haystack(f"bucket:{key}", data) for key, data in remaining.items()]
    findings = find_secrets([*store, *objects], full_run.world.secrets())
    assert findings == [], report(findings)
