"""The lifecycle on a Google Cloud Storage bucket (the emulator), through the library: the same
copy, byte-for-byte read back, fetch and retention as on S3."""

from __future__ import annotations

from pathlib import Path

from tests.support.cloud_lifecycle import check_lifecycle
from tests.support.gcs_emulator import GcsEmulator
from tests.support.tiered import build_tiered
from tierflow.storage.gcs import GcsObjectStore


def test_copy_verify_fetch_and_retention_on_gcs(
    tmp_path: Path, gcs_emulator: GcsEmulator, gcs_bucket: str
) -> None:
    t = build_tiered(
        tmp_path, layout="chunked-encrypted", remote_storage=f"gs://{gcs_bucket}/cluster-a"
    )
    assert isinstance(t.rsm.objects, GcsObjectStore)
    client = gcs_emulator.client()
    check_lifecycle(t, lambda: {blob.name for blob in client.list_blobs(gcs_bucket)})
