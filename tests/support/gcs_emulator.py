"""A real Google Cloud Storage server on loopback for the suite: ``gcp-storage-emulator``
(requirements-dev), which serves the JSON API, resumable sessions with their status queries,
and batches.

One server serves the whole session, started on first use; every test gets a fresh bucket,
removed afterwards. The client library is pointed at it by ``STORAGE_EMULATOR_HOST``, its own
switch for emulators, and the Airflow connection ``google_cloud_default`` is anonymous.

Tests that follow a credential (the handover, the secret-leak scan) use ``service_account``
instead: a service account key of our own, generated for the session, whose ``token_uri`` is
an OAuth2 token endpoint on loopback. google-auth signs its JWT grant with the key and gets a
recognisable access token back, as from Google; the emulator accepts any token.

Register the fixtures with ``from tests.support.gcs_emulator import gcs_emulator, gcs_bucket``
in the top-level conftest.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.ports import free_port
from tests.support.processes import stop_group, wait_answering

READY_TIMEOUT_S = 15.0
PROJECT = "tierflow-test"
EMULATOR_ENV = "STORAGE_EMULATOR_HOST"


@dataclass(frozen=True)
class GcsEmulator:
    endpoint: str  # http://127.0.0.1:<port>

    def client(self) -> Any:
        """A plain anonymous storage.Client, for what the tests check behind the store's back."""
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        options = {"api_endpoint": self.endpoint}
        return storage.Client(PROJECT, AnonymousCredentials(), client_options=options)

    def connection_env(
        self, conn_id: str = "google_cloud_default", keyfile: dict[str, str] | None = None
    ) -> dict[str, str]:
        """The emulator switch and an Airflow connection (JSON, no Airflow DB): anonymous, or
        with a service account key."""
        if keyfile is None:
            extra: dict[str, object] = {"is_anonymous": True, "project": PROJECT}
        else:
            extra = {"keyfile_dict": json.dumps(keyfile), "project": PROJECT}
        connection = {"conn_type": "google_cloud_platform", "extra": extra}
        return {
            EMULATOR_ENV: self.endpoint,
            f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(connection),
        }


@contextmanager
def running_gcs_emulator(workdir: Path) -> Iterator[GcsEmulator]:
    """Start the emulator on a free loopback port, its objects in memory; stop it on exit."""
    port, log = free_port(), workdir / "gcs-emulator.log"
    endpoint = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "gcp_storage_emulator", "start", "--in-memory", "--quiet"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=workdir, start_new_session=True,
        )  # fmt: skip
    try:
        buckets = f"{endpoint}/storage/v1/b"
        wait_answering("the GCS emulator", buckets, process, log, READY_TIMEOUT_S)
        yield GcsEmulator(endpoint)
    finally:
        stop_group(process, term_wait_s=2)


@pytest.fixture(scope="session")
def gcs_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GcsEmulator]:
    with running_gcs_emulator(tmp_path_factory.mktemp("gcs")) as server:
        yield server


@pytest.fixture
def gcs_bucket(gcs_emulator: GcsEmulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh, empty bucket; ``google_cloud_default`` reaches the emulator during the test."""
    for name, value in gcs_emulator.connection_env().items():
        monkeypatch.setenv(name, value)
    name = f"tierflow-test-{uuid.uuid4().hex[:16]}"
    bucket = gcs_emulator.client().create_bucket(name)
    yield name
    from google.api_core.exceptions import Conflict

    with contextlib.suppress(Conflict):  # sessions cancelled by DELETE, which it does not serve
        bucket.delete(force=True)


@dataclass(frozen=True)
class ServiceAccount:
    keyfile: dict[str, str]  # as a service account's JSON key file has it
    access_token: str  # what the token endpoint hands out for it
    grants: list[str]  # one entry per token handed out


@contextmanager
def token_endpoint(access_token: str, grants: list[str]) -> Iterator[str]:
    """An OAuth2 token endpoint on loopback answering JWT bearer grants; its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            granted = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer" in body
            if granted:
                grants.append(access_token)
            answer = {"access_token": access_token, "expires_in": 3600, "token_type": "Bearer"}
            payload = json.dumps(answer if granted else {"error": "invalid_grant"}).encode()
            self.send_response(200 if granted else 400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/token"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def service_account() -> Iterator[ServiceAccount]:
    from Crypto.PublicKey import RSA

    pem = RSA.generate(2048).export_key(pkcs=8).decode()
    token = f"ya29.tierflow-fake-gcs-token-{uuid.uuid4().hex}"
    grants: list[str] = []
    with token_endpoint(token, grants) as token_uri:
        keyfile = {
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": uuid.uuid4().hex,
            "private_key": pem,
            "client_email": f"tierflow@{PROJECT}.iam.gserviceaccount.com",
            "client_id": "100000000000000000001",
            "token_uri": token_uri,
        }
        yield ServiceAccount(keyfile, token, grants)
