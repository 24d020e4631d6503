"""Open an object store of each backend the storage tests run against (local, S3, GCS, Azure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.azurite import ACCOUNT
from tierflow.storage.factory import open_object_store
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.s3 import S3ObjectStore


def cloud_bucket_url(request: pytest.FixtureRequest, backend: str, prefix: str) -> str:
    """The URL of a fresh bucket (or container) on "s3", "gcs" or "azure", under ``prefix``:
    what TIERFLOW_REMOTE_STORAGE names for a test that runs tierflow against that cloud."""
    if backend == "s3":
        return f"s3://{request.getfixturevalue('s3_bucket')}/{prefix}"
    if backend == "gcs":
        return f"gs://{request.getfixturevalue('gcs_bucket')}/{prefix}"
    return f"abfs://{request.getfixturevalue('azure_container')}@{ACCOUNT}/{prefix}"


def open_backend(request: pytest.FixtureRequest, backend: str, tmp_path: Path) -> ObjectStore:
    """A store of the backend. "s3", "gcs" and "azure" are opened from their URLs through the
    Airflow connection, as tierflow opens the configured bucket; "s3-prefix" shares the
    session's client (faster)."""
    if backend == "local":
        return open_object_store(str(tmp_path / "bucket"))
    if backend.startswith("gcs"):
        bucket = request.getfixturevalue("gcs_bucket")
        prefix = "/deployments/eu-1" if backend == "gcs-prefix" else ""
        return open_object_store(f"gs://{bucket}{prefix}")
    if backend.startswith("azure"):
        container = request.getfixturevalue("azure_container")
        prefix = "/deployments/eu-1" if backend == "azure-prefix" else ""
        return open_object_store(f"abfs://{container}@{ACCOUNT}{prefix}")
    bucket = request.getfixturevalue("s3_bucket")
    if backend == "s3":
        return open_object_store(f"s3://{bucket}")
    client = request.getfixturevalue("moto_server").client()
    return S3ObjectStore(bucket, prefix="/deployments/eu-1", client=client)
