"""A real Azure Blob Storage server on loopback for the suite: Azurite, Microsoft's emulator,
installed from the npm registry by ``make test-servers`` (into ``.test-servers/azurite``).

One server serves the whole session, started on first use with an account of our own (a
recognisable fake key, not Azurite's well-known one, so the secret-leak tests can search for
it); every test gets a fresh container, removed afterwards.

Register the fixtures with ``from tests.support.azurite import azurite, azure_container`` in
the top-level conftest.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.ports import free_port
from tests.support.processes import stop_group, wait_answering

PROJECT = Path(__file__).resolve().parents[2]
AZURITE = PROJECT / ".test-servers" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
READY_TIMEOUT_S = 30.0
ACCOUNT = "tierflowacct"
ACCOUNT_KEY = base64.b64encode(b"tierflow-fake-azure-account-key-7c41e0").decode()


@dataclass(frozen=True)
class Azurite:
    endpoint: str  # the account's blob endpoint: http://127.0.0.1:<port>/<account>

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
            f"BlobEndpoint={self.endpoint};"
        )

    def service(self) -> Any:
        """A plain BlobServiceClient, for what the tests check behind the store's back."""
        from azure.storage.blob import BlobServiceClient

        return BlobServiceClient.from_connection_string(self.connection_string)

    def connection_env(self, conn_id: str = "wasb_default") -> dict[str, str]:
        """The Airflow connection (JSON form, no Airflow DB needed) pointing WasbHook at us."""
        connection = {"conn_type": "wasb", "extra": {"connection_string": self.connection_string}}
        return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(connection)}


@contextmanager
def running_azurite(workdir: Path) -> Iterator[Azurite]:
    """Start Azurite's blob service on a free loopback port; stop it on exit."""
    if not AZURITE.exists():
        raise RuntimeError(f"{AZURITE} not found: run make test-servers (it installs Azurite)")
    port, log = free_port(), workdir / "azurite.log"
    command = [str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port)]
    command += ["--location", str(workdir), "--skipApiVersionCheck", "--loose"]
    env = {**os.environ, "AZURITE_ACCOUNTS": f"{ACCOUNT}:{ACCOUNT_KEY}"}
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True,
        )  # fmt: skip
    try:
        endpoint = f"http://127.0.0.1:{port}/{ACCOUNT}"
        wait_answering("Azurite", f"{endpoint}?comp=list", process, log, READY_TIMEOUT_S)
        yield Azurite(endpoint)
    finally:
        stop_group(process, term_wait_s=2)


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Azurite]:
    with running_azurite(tmp_path_factory.mktemp("azurite")) as server:
        yield server


@pytest.fixture
def azure_container(azurite: Azurite, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh, empty container; ``wasb_default`` points at Azurite while the test runs."""
    for name, value in azurite.connection_env().items():
        monkeypatch.setenv(name, value)
    name = f"tierflow-test-{uuid.uuid4().hex[:16]}"
    service = azurite.service()
    service.create_container(name)
    yield name
    service.delete_container(name)
