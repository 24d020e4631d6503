"""The segment_copy DAG, run by Airflow itself, uploading to Google Cloud Storage (the
emulator) from Spark executors, which get an access token handed over: every segment lands,
reads back byte for byte, and neither the service account's private key nor the token is in
the run's log (which holds the spark-submit command line), XComs, rendered fields or files."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.airflow_leaks import assert_leaked_nowhere, copied_keys
from tests.support.gcs_emulator import GcsEmulator, ServiceAccount
from tests.support.tiered import build_tiered, eligible

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def test_spark_rewrites_into_gcs_and_the_credentials_leak_nowhere(
    tmp_path: Path, gcs_emulator: GcsEmulator, gcs_bucket: str, service_account: ServiceAccount
) -> None:
    t = build_tiered(
        tmp_path,
        layout="chunked-encrypted",
        remote_storage=f"gs://{gcs_bucket}/dag-run",
        spark_threshold_bytes=1,
    )
    airflow_home, log_file = tmp_path / "airflow", tmp_path / "segment_copy.log"
    connection = gcs_emulator.connection_env(keyfile=service_account.keyfile)
    state = run_dag_in_subprocess(
        "segment_copy",
        project=PROJECT,
        airflow_home=airflow_home,
        extra_env={**t.settings.as_env(), **connection},
        log_file=log_file,
    )
    log_text = log_file.read_text()
    assert state == "success", log_text[-3000:]
    expected = sum(len(eligible(log_)) for log_ in t.logs())
    assert f"rewrote {expected} of {expected} segments" in log_text, "Spark did the upload"

    keys = copied_keys(t)
    stored = {blob.name for blob in gcs_emulator.client().list_blobs(gcs_bucket)}
    assert stored == {f"dag-run/{key}" for key in keys}

    key_body = service_account.keyfile["private_key"].splitlines()[1]
    secrets = (service_account.access_token, key_body)
    assert_leaked_nowhere(secrets, log_text, airflow_home, tmp_path)
