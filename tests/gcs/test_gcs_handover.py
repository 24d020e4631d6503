"""The GCS connection handed to Spark executors: resolved through GCSHook by the task, it
becomes an access token minted now (the service account's private key stays with Airflow),
round-trips through the handover's JSON with the token out of its repr, and an executor builds
a plain client from it, writing to the emulator without importing Airflow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.gcs_emulator import GcsEmulator, ServiceAccount
from tests.support.handover import EXECUTOR
from tierflow.config import Settings
from tierflow.storage.gcs_handover import GcsClientSpec
from tierflow.storage.handover import connection_client, from_json, to_json


@pytest.fixture
def keyed(
    gcs_bucket: str, gcs_emulator: GcsEmulator, service_account: ServiceAccount,
    monkeypatch: pytest.MonkeyPatch,
) -> str:  # fmt: skip
    """The bucket, with google_cloud_default holding the service account's key."""
    for name, value in gcs_emulator.connection_env(keyfile=service_account.keyfile).items():
        monkeypatch.setenv(name, value)
    return gcs_bucket


def test_the_connection_hands_over_a_token_never_the_key(
    tmp_path: Path, keyed: str, service_account: ServiceAccount
) -> None:
    spec = connection_client(Settings.embedded(tmp_path, remote_storage=f"gs://{keyed}/t"))
    assert isinstance(spec, GcsClientSpec)
    assert spec.token == service_account.access_token and spec.expiry
    assert spec.token not in repr(spec)
    handed = to_json(spec)
    assert from_json(handed) == spec
    assert "PRIVATE KEY" not in handed and service_account.keyfile["private_key_id"] not in handed


def test_an_anonymous_connection_hands_over_no_token(tmp_path: Path, gcs_bucket: str) -> None:
    spec = connection_client(Settings.embedded(tmp_path, remote_storage=f"gs://{gcs_bucket}"))
    assert spec == GcsClientSpec("tierflow-test")


def test_executors_write_with_the_handed_over_token_and_never_import_airflow(
    tmp_path: Path, keyed: str, gcs_emulator: GcsEmulator
) -> None:
    settings = Settings.embedded(tmp_path, remote_storage=f"gs://{keyed}/exec")
    spec = connection_client(settings)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    run = subprocess.run(
        [sys.executable, "-c", EXECUTOR, to_json(spec)],
        env={**env, **settings.as_env()}, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1]) == []
    blob = gcs_emulator.client().bucket(keyed).blob("exec/from-executor")
    assert blob.download_as_bytes() == b"no airflow here"
