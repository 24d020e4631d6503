"""What only the S3 backend has: multipart uploads and their abort, the object's digest, batched
deletes, its errors, and keeping credentials out of everything it prints. Against moto's
standalone server on loopback (see tests/support/moto_server.py)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.moto_server import SECRET_ACCESS_KEY, MotoServer
from tierflow.config import MIN_S3_PART_SIZE
from tierflow.rsm import RemoteResourceNotFoundError, RemoteStorageError
from tierflow.storage.factory import UnsupportedStorageURLError, open_object_store
from tierflow.storage.s3 import S3ObjectStore, parse_s3_url

MiB = 1024 * 1024
PART = MIN_S3_PART_SIZE  # the smallest S3 allows: 5 MiB


@pytest.fixture
def store(moto_server: MotoServer, s3_bucket: str) -> S3ObjectStore:
    return S3ObjectStore(s3_bucket, prefix="tiered", part_size=PART, client=moto_server.client())


def pattern(size: int) -> bytes:
    """Bytes that differ at every offset of a part, so a misplaced part cannot go unnoticed."""
    block = hashlib.sha256(b"tierflow").digest() * 4096  # 128 KiB
    return (block * (size // len(block) + 1))[:size]


def in_chunks(data: bytes, size: int) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def open_uploads(store: S3ObjectStore) -> list[dict]:
    return store.client.list_multipart_uploads(Bucket=store.bucket).get("Uploads", [])


def test_an_object_above_the_part_size_goes_up_in_parts(store: S3ObjectStore):
    data = pattern(2 * PART + 17)
    info = store.put_chunks("t/0/big.log", in_chunks(data, MiB - 3))
    assert (info.size, info.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    head = store.client.head_object(Bucket=store.bucket, Key="tiered/t/0/big.log")
    assert head["ETag"].strip('"').endswith("-3"), "three parts: 5 MiB, 5 MiB, 17 bytes"
    assert store.stat("t/0/big.log").sha256 == info.sha256, "the digest is kept as a tag"
    assert store.read_range("t/0/big.log", PART - 5, PART + 5) == data[PART - 5 : PART + 5]
    assert b"".join(store.iter_chunks("t/0/big.log")) == data
    assert open_uploads(store) == []


def test_a_file_above_the_part_size_goes_up_in_parts(store: S3ObjectStore, tmp_path: Path):
    source = tmp_path / "segment.log"
    source.write_bytes(pattern(PART + 1))
    info = store.put_file("t/0/file.log", source)
    assert info.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    head = store.client.head_object(Bucket=store.bucket, Key="tiered/t/0/file.log")
    assert head["ETag"].strip('"').endswith("-2")
    assert store.read_range("t/0/file.log", PART) == source.read_bytes()[PART:]


def test_an_object_of_exactly_one_part_is_a_single_put(store: S3ObjectStore):
    info = store.put_chunks("t/0/one.log", in_chunks(pattern(PART), MiB))
    head = store.client.head_object(Bucket=store.bucket, Key="tiered/t/0/one.log")
    assert "-" not in head["ETag"]
    assert head["Metadata"] == {"sha256": info.sha256}
    assert store.stat("t/0/one.log").sha256 == info.sha256


def failing_after(data: bytes, fail_at: int, error: BaseException) -> Iterator[bytes]:
    for position, chunk in enumerate(in_chunks(data, MiB)):
        if position * MiB >= fail_at:
            raise error
        yield chunk


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        pytest.param(RuntimeError("encryption failed"), RuntimeError, id="encryption-failed"),
        # as the local store reports it
        pytest.param(OSError("disk read failed"), RemoteStorageError, id="disk-read-failed"),
        pytest.param(KeyboardInterrupt(), KeyboardInterrupt, id="interrupted"),
    ],
)
def test_a_failure_mid_upload_aborts_it_and_stores_nothing(
    store: S3ObjectStore, error: BaseException, raised: type[BaseException]
):
    store.put_bytes("t/0/seg.log", b"the previous attempt")
    data = pattern(3 * PART)
    with pytest.raises(raised):
        store.put_chunks("t/0/seg.log", failing_after(data, 2 * PART + MiB, error))
    assert open_uploads(store) == [], "the multipart upload was aborted"
    assert store.read_range("t/0/seg.log") == b"the previous attempt", "nothing replaced it"
    with pytest.raises(raised):
        store.put_chunks("t/0/new.log", failing_after(data, 2 * PART, error))
    assert open_uploads(store) == []
    assert store.stat("t/0/new.log") is None
    assert list(store.list()) == ["t/0/seg.log"]


def test_a_failure_reported_by_the_server_aborts_too(store: S3ObjectStore):
    """Parts below S3's minimum are accepted one by one and refused at completion
    (EntityTooSmall): the server fails the upload after every part is in."""
    store.part_size = MiB  # past the constructor's check, as a store with other limits might
    with pytest.raises(RemoteStorageError, match=r"t/0/small.log: upload failed: EntityTooSmall"):
        store.put_chunks("t/0/small.log", in_chunks(pattern(3 * MiB), MiB // 2))
    assert open_uploads(store) == []
    assert store.stat("t/0/small.log") is None


@pytest.mark.parametrize("chunk", [1000, 4096])
def test_ranged_reads_at_chunk_boundaries(store: S3ObjectStore, chunk: int):
    data = pattern(10 * chunk + 3)
    store.put_bytes("t/0/chunks.log", data)
    for index in range(11):
        start = index * chunk
        for lo, hi in [(start, start + chunk), (start - 1, start + 1), (start, start + 1)]:
            lo = max(lo, 0)
            assert store.read_range("t/0/chunks.log", lo, hi) == data[lo:hi], (lo, hi)
    assert store.read_range("t/0/chunks.log", len(data) - 1) == data[-1:]
    assert store.read_range("t/0/chunks.log", len(data)) == b""


def test_reads_are_single_ranged_gets(store: S3ObjectStore):
    store.put_bytes("t/0/r.log", b"0123456789")
    ranges: list[str | None] = []
    store.client.meta.events.register(
        "before-parameter-build.s3.GetObject",
        lambda params, **_: ranges.append(params.get("Range")),
    )
    try:
        assert store.read_range("t/0/r.log", 2, 5) == b"234"
        assert store.read_range("t/0/r.log", 7) == b"789"
        assert store.read_range("t/0/r.log") == b"0123456789"
    finally:
        store.client.meta.events.unregister("before-parameter-build.s3.GetObject")
    assert ranges == ["bytes=2-4", "bytes=7-", None]


def test_deletes_go_in_batches_of_1000_and_missing_keys_are_fine(store: S3ObjectStore):
    """1500 keys, of which only the first and last of each batch exist (creating 1500 objects
    would take seconds): two DeleteObjects calls, twice, and everything is gone."""
    keys = [f"t/0/{i:05d}.log" for i in range(1500)]
    existing = [keys[0], keys[999], keys[1000], keys[-1]]
    for key in existing:
        store.put_bytes(key, b"x")
    batches: list[int] = []
    store.client.meta.events.register(
        "before-parameter-build.s3.DeleteObjects",
        lambda params, **_: batches.append(len(params["Delete"]["Objects"])),
    )
    try:
        store.delete(keys)
        store.delete(keys)  # all gone: still a success
        store.delete([])
    finally:
        store.client.meta.events.unregister("before-parameter-build.s3.DeleteObjects")
    assert batches == [1000, 500, 1000, 500]
    assert list(store.list()) == []


def test_errors_name_the_key_and_never_read_as_missing(moto_server: MotoServer):
    gone = S3ObjectStore("no-such-bucket-here", client=moto_server.client())
    with pytest.raises(RemoteStorageError, match=r"t/0/x\.log: upload failed: NoSuchBucket"):
        gone.put_bytes("t/0/x.log", b"x")
    with pytest.raises(RemoteStorageError, match=r"t/0/x\.log: delete failed: NoSuchBucket"):
        gone.delete(["t/0/x.log"])
    with pytest.raises(RemoteStorageError, match="list failed: NoSuchBucket") as listing:
        list(gone.list("t/"))
    assert not isinstance(listing.value, RemoteResourceNotFoundError)


def test_list_pages_through_the_bucket_in_order(store: S3ObjectStore):
    keys = [f"t/{p}/{i:04d}.log" for p in (0, 1) for i in range(12)]
    for key in reversed(keys):
        store.put_bytes(key, b"")
    store.client.put_object(Bucket=store.bucket, Key="outside/t/0/x.log", Body=b"")
    store.client.put_object(Bucket=store.bucket, Key="tiered/t/folder/", Body=b"")  # a marker
    store.list_page_size = 5
    assert list(store.list()) == keys
    assert list(store.list("t/1/")) == keys[12:]
    assert list(store.list("t/0/001")) == keys[10:12]


def test_describe_names_bucket_and_endpoint_never_credentials(
    moto_server: MotoServer, s3_bucket: str
):
    store = open_object_store(f"s3://{s3_bucket}/p")
    assert store.describe() == f"s3://{s3_bucket}/p/ at {moto_server.endpoint}"
    assert SECRET_ACCESS_KEY not in repr(vars(store)) + store.describe()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("s3://bucket", ("bucket", "")),
        ("s3://bucket/", ("bucket", "")),
        ("s3://bucket/a/b", ("bucket", "a/b/")),
        ("s3://bucket//a/b/", ("bucket", "a/b/")),
    ],
    ids=lambda value: (
        None if isinstance(value, str) else "with-prefix" if value[1] else "no-prefix"
    ),
)
def test_s3_urls(url: str, expected: tuple[str, str]):
    assert parse_s3_url(url) == expected


@pytest.mark.parametrize("url", ["s3://", "s3:///prefix", "s3://key:secret@bucket/p", "hdfs://b"])
def test_bad_storage_urls_are_refused(url: str):
    with pytest.raises(UnsupportedStorageURLError):
        open_object_store(url)


def test_part_size_below_the_s3_minimum_is_refused(moto_server: MotoServer):
    with pytest.raises(ValueError, match="part size"):
        S3ObjectStore("b", part_size=PART - 1, client=moto_server.client())
