"""What the GCS store does beyond the shared contract, against fake-gcs-server on loopback:
large objects go up as resumable uploads, visible only once the last chunk is in, with their
sha256 patched into that generation; a producer failing mid-upload leaves no object; listings
page; and the URL is checked in one line."""

from __future__ import annotations

import hashlib

import pytest

from tests.support.gcs_emulator import GcsEmulator
from tierflow.storage import gcs
from tierflow.storage.factory import UnsupportedStorageURLError, open_object_store
from tierflow.storage.gcs import GcsObjectStore, parse_gcs_url

PART = 256 * 1024  # GCS's smallest chunk


@pytest.fixture
def store(gcs_bucket: str) -> GcsObjectStore:
    return open_object_store(f"gs://{gcs_bucket}/p", part_size=PART)


def test_a_large_object_is_a_resumable_upload_with_its_sha256(
    store: GcsObjectStore, gcs_emulator: GcsEmulator, gcs_bucket: str
) -> None:
    data = bytes(range(256)) * (PART * 7 // 2 // 256)  # three and a half chunks
    pieces = (data[i : i + 10_000] for i in range(0, len(data), 10_000))
    info = store.put_chunks("t/0/big.log", pieces)
    assert info.sha256 == hashlib.sha256(data).hexdigest()
    blob = gcs_emulator.client().bucket(gcs_bucket).get_blob("p/t/0/big.log")
    assert blob.metadata == {"sha256": info.sha256}, "patched into the generation written"
    assert store.stat("t/0/big.log").sha256 == info.sha256
    assert b"".join(store.iter_chunks("t/0/big.log", chunk_size=5000)) == data
    assert store.read_range("t/0/big.log", PART - 3, PART + 3) == data[PART - 3 : PART + 3]


def test_an_exact_number_of_chunks_ends_with_an_empty_last_one(store: GcsObjectStore) -> None:
    data = bytes(range(256)) * (PART * 2 // 256)
    store.put_bytes("t/0/even.log", data)
    assert store.read_range("t/0/even.log") == data
    assert store.stat("t/0/even.log").size == 2 * PART


def test_a_producer_failing_mid_upload_leaves_no_object(store: GcsObjectStore) -> None:
    def failing():
        yield b"x" * (PART * 2 + 1)  # two chunks sent before the failure
        raise RuntimeError("the producer broke")

    with pytest.raises(RuntimeError, match="the producer broke"):
        store.put_chunks("t/0/broken.log", failing())
    assert store.stat("t/0/broken.log") is None
    assert list(store.list("t/0/")) == []


def test_listings_page_and_deletes_are_idempotent(
    store: GcsObjectStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gcs, "LIST_PAGE_SIZE", 2)
    keys = [f"t/1/{i:02d}.log" for i in range(5)]
    for key in keys:
        store.put_bytes(key, key.encode())
    assert list(store.list("t/")) == keys
    store.delete([*keys[:3], "t/1/never-there"])
    store.delete(keys[:1])
    assert list(store.list("t/")) == keys[3:]


@pytest.mark.parametrize("url", ["gs://", "gs://user:secret@bucket/p", "gs://b/p?sig=secret"])
def test_a_bad_url_is_one_line_without_its_secrets(url: str) -> None:
    with pytest.raises(UnsupportedStorageURLError) as raised:
        open_object_store(url)
    assert "secret" not in str(raised.value) and "\n" not in str(raised.value)


def test_urls_name_bucket_and_prefix() -> None:
    assert parse_gcs_url("gs://logs/a/b") == ("logs", "a/b/")
    assert parse_gcs_url("gs://logs") == ("logs", "")
