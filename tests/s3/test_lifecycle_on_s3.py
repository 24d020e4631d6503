"""The lifecycle on an S3 bucket (and, from tests/azure, on an Azure container), through the
library: copy every partition of a generated broker log (chunked layout, zstd and AES-256-GCM),
read it all back byte for byte, fetch a batch, expire one segment by retention, and compare the
bucket with the metadata."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cloud_lifecycle import check_lifecycle
from tests.support.moto_server import MotoServer
from tests.support.tiered import Tiered, build_tiered
from tierflow.storage.s3 import S3ObjectStore


@pytest.fixture
def tiered(tmp_path: Path, s3_bucket: str) -> Tiered:
    return build_tiered(
        tmp_path, layout="chunked-encrypted", remote_storage=f"s3://{s3_bucket}/cluster-a"
    )


def test_copy_verify_fetch_and_retention_on_s3(
    tiered: Tiered, moto_server: MotoServer, s3_bucket: str
):
    assert isinstance(tiered.rsm.objects, S3ObjectStore)
    raw = moto_server.client().list_objects_v2
    check_lifecycle(tiered, lambda: {item["Key"] for item in raw(Bucket=s3_bucket)["Contents"]})
