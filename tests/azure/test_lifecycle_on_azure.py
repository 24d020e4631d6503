"""The lifecycle on an Azure Blob Storage container (Azurite), through the library: the same
copy, byte-for-byte read back, fetch and retention as on S3."""

from __future__ import annotations

from pathlib import Path

from tests.support.azurite import ACCOUNT, Azurite
from tests.support.cloud_lifecycle import check_lifecycle
from tests.support.tiered import build_tiered
from tierflow.storage.azure_blob import AzureBlobObjectStore


def test_copy_verify_fetch_and_retention_on_azure(
    tmp_path: Path, azurite: Azurite, azure_container: str
) -> None:
    url = f"abfs://{azure_container}@{ACCOUNT}/cluster-a"
    t = build_tiered(tmp_path, layout="chunked-encrypted", remote_storage=url)
    assert isinstance(t.rsm.objects, AzureBlobObjectStore)
    container = azurite.service().get_container_client(azure_container)
    check_lifecycle(t, lambda: set(container.list_blob_names()))
