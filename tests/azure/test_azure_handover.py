"""The Azure connection handed to Spark executors: resolved through WasbHook by the task, it
round-trips through the handover's JSON with the key out of its repr, and an executor builds
a plain client from it, writing to Azurite without importing Airflow."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, Azurite
from tests.support.handover import EXECUTOR
from tierflow.config import Settings
from tierflow.storage.azure_handover import AzureClientSpec
from tierflow.storage.handover import connection_client, from_json, to_json


def test_the_spec_of_the_connection_round_trips_without_showing_the_key(
    tmp_path: Path, azure_container: str, azurite: Azurite
) -> None:
    url = f"abfs://{azure_container}@{ACCOUNT}/tiered"
    spec = connection_client(Settings.embedded(tmp_path, remote_storage=url))
    assert isinstance(spec, AzureClientSpec)
    assert spec.account_url.rstrip("/") == azurite.endpoint and spec.account_key == ACCOUNT_KEY
    assert ACCOUNT_KEY not in repr(spec)
    assert from_json(to_json(spec)) == spec


def test_executors_write_with_the_handed_over_spec_and_never_import_airflow(
    tmp_path: Path, azurite: Azurite, azure_container: str
) -> None:
    url = f"abfs://{azure_container}@{ACCOUNT}/tiered"
    settings = Settings.embedded(tmp_path, remote_storage=url, storage_layout="plain")
    spec = AzureClientSpec(azurite.endpoint, ACCOUNT, account_key=ACCOUNT_KEY)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW_CONN_")}
    env.update(settings.as_env())
    done = subprocess.run(
        [sys.executable, "-c", EXECUTOR, to_json(spec)],
        env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert json.loads(done.stdout.splitlines()[-1]) == []
    blob = azurite.service().get_blob_client(azure_container, "tiered/from-executor")
    assert blob.download_blob().readall() == b"no airflow here"
