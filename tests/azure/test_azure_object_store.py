"""What the Azure Blob store does beyond the shared contract, against Azurite on loopback:
large objects go up as staged blocks, visible only once committed with their sha256; a
producer failing mid-upload leaves no blob, only uncommitted blocks that Azure discards; and
the URL and the connection's account are checked, in one line each."""

from __future__ import annotations

import hashlib

import pytest

from tests.support.azurite import ACCOUNT, Azurite
from tierflow.storage.azure_blob import AzureBlobObjectStore, parse_azure_url
from tierflow.storage.factory import UnsupportedStorageURLError, open_object_store

PART = 64 * 1024


@pytest.fixture
def store(azure_container: str) -> AzureBlobObjectStore:
    return AzureBlobObjectStore(azure_container, account=ACCOUNT, prefix="p", part_size=PART)


def test_a_large_object_is_committed_blocks_with_its_sha256(
    store: AzureBlobObjectStore, azurite: Azurite, azure_container: str
) -> None:
    data = bytes(range(256)) * (PART * 7 // 2 // 256)  # three and a half parts
    pieces = (data[i : i + 10_000] for i in range(0, len(data), 10_000))
    info = store.put_chunks("t/0/big.log", pieces)
    assert info.sha256 == hashlib.sha256(data).hexdigest()
    blob = azurite.service().get_blob_client(azure_container, "p/t/0/big.log")
    committed, _ = blob.get_block_list("committed")
    assert len(committed) == 4, "staged as blocks of the part size"
    assert store.stat("t/0/big.log").sha256 == info.sha256
    assert b"".join(store.iter_chunks("t/0/big.log", chunk_size=5000)) == data
    assert store.read_range("t/0/big.log", PART - 3, PART + 3) == data[PART - 3 : PART + 3]


def test_a_producer_failing_mid_upload_leaves_no_blob(
    store: AzureBlobObjectStore, azurite: Azurite, azure_container: str
) -> None:
    def failing():
        yield b"x" * (PART * 2 + 1)  # two blocks staged before the failure
        raise RuntimeError("the producer broke")

    with pytest.raises(RuntimeError, match="the producer broke"):
        store.put_chunks("t/0/broken.log", failing())
    assert store.stat("t/0/broken.log") is None
    assert list(store.list("t/0/")) == []


@pytest.mark.parametrize(
    "url",
    ["abfs://container", "abfs://user:secret@container@acct/p", "abfs://c@acct/p?sig=1"],
)
def test_a_bad_url_is_one_line_without_its_secrets(url: str) -> None:
    with pytest.raises(UnsupportedStorageURLError) as raised:
        open_object_store(url)
    assert "secret" not in str(raised.value) and "\n" not in str(raised.value)


def test_urls_name_container_account_and_prefix() -> None:
    assert parse_azure_url("abfs://logs@acct.dfs.core.windows.net/a/b") == ("logs", "acct", "a/b/")
    assert parse_azure_url("wasbs://logs@acct") == ("logs", "acct", "")


def test_the_account_of_the_url_must_be_the_connection_s(azure_container: str) -> None:
    with pytest.raises(ValueError, match=f"for the storage account '{ACCOUNT}'"):
        open_object_store(f"abfs://{azure_container}@otheraccount")
