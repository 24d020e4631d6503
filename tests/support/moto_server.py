"""A real S3-compatible HTTP server on loopback for the suite: moto's standalone ``moto_server``.

It runs as its own process (not ``mock_aws``), so the S3 backend talks HTTP to it exactly as
it would to S3, MinIO or Ceph, and so can Airflow tasks and Spark executors in their own
processes. One server serves the whole session, started on first use; every test gets a fresh
bucket, emptied and removed afterwards. The server is stopped at the end of the session.

Register the fixtures with ``from tests.support.moto_server import moto_server, s3_bucket``
in the top-level conftest.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from tests.support.ports import free_port
from tests.support.processes import stop_group

READY_TIMEOUT_S = 30.0
REGION = "us-east-1"
# Recognisable fake credentials: the secret-leak tests search every output for them.
ACCESS_KEY_ID = "AKIATIERFLOWFAKEKEY1"
SECRET_ACCESS_KEY = "tierflow-fake-secret-4f1d9c2b7e"
SESSION_TOKEN = "tierflow-fake-session-token-a83e51"


@dataclass(frozen=True)
class MotoServer:
    endpoint: str
    log: Path

    def client(self) -> Any:
        """A plain boto3 client (one per session: building one costs ~0.2 s), for what the
        tests check behind the store's back."""
        return self._client

    @cached_property
    def _client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=ACCESS_KEY_ID,
            aws_secret_access_key=SECRET_ACCESS_KEY,
        )

    def connection_env(self, conn_id: str = "aws_default") -> dict[str, str]:
        """The Airflow connection (JSON form, no Airflow DB needed) pointing S3Hook at us."""
        extra = {
            "endpoint_url": self.endpoint,
            "region_name": REGION,
            "aws_session_token": SESSION_TOKEN,
        }
        connection = {
            "conn_type": "aws",
            "login": ACCESS_KEY_ID,
            "password": SECRET_ACCESS_KEY,
            "extra": extra,
        }
        return {f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(connection)}


def moto_server_command() -> str:
    beside = Path(sys.executable).parent / "moto_server"
    found = str(beside) if beside.exists() else shutil.which("moto_server")
    if found is None:
        raise RuntimeError("moto_server not found: install requirements-dev.txt (moto[server])")
    return found


@contextmanager
def running_moto_server(log: Path) -> Iterator[MotoServer]:
    """Start moto_server on a free loopback port, wait until it answers, stop it on exit."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    with open(log, "w") as out:
        process = subprocess.Popen(
            [moto_server_command(), "-H", "127.0.0.1", "-p", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stopped as a whole
        )
    try:
        _wait_ready(endpoint, process, log)
        yield MotoServer(endpoint, log)
    finally:
        stop_group(process)


def _wait_ready(endpoint: str, process: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode}: {log.read_text()}")
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"moto_server not ready within {READY_TIMEOUT_S:.0f} s: {log.read_text()}")


def empty_and_remove_bucket(client: Any, bucket: str) -> None:
    """Aborts open uploads, deletes every object, then the bucket: the server stays small."""
    uploads = client.get_paginator("list_multipart_uploads")
    for page in uploads.paginate(Bucket=bucket):
        for upload in page.get("Uploads") or []:
            client.abort_multipart_upload(
                Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"]
            )
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        keys = [{"Key": item["Key"]} for item in page.get("Contents") or []]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
    client.delete_bucket(Bucket=bucket)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    log = tmp_path_factory.mktemp("moto") / "moto_server.log"
    with running_moto_server(log) as server:
        yield server


@pytest.fixture
def s3_bucket(moto_server: MotoServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh, empty bucket; ``aws_default`` points at the server while the test runs."""
    for name, value in moto_server.connection_env().items():
        monkeypatch.setenv(name, value)
    client = moto_server.client()
    bucket = f"tierflow-test-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=bucket)
    yield bucket
    empty_and_remove_bucket(client, bucket)
