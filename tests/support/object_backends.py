"""Open an object store of each backend the storage tests run against (local, S3, GCS, Azure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.azurite import ACCOUNT
from tierflow.storage.factory import open_object_store
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.s3 import S3ObjectStore


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
