"""The storage managers on S3: what tests/unit/storage checks on the local bucket, where
it does not depend on the bucket being a directory. Chunked with zstd and AES-256-GCM
(round trips, ranged reads fetching only the covering chunks, a segment large enough for
multipart uploads, cleanup after a failed copy) and plain (streamed through iter_chunks)."""

from __future__ import annotations

import json
from itertools import product
from pathlib import Path

import pytest

from tests.support.moto_server import MotoServer
from tests.unit.transform.support import (
    CountingObjectStore,
    a_segment,
    record_batches,
    segment_files,
)
from tierflow.config import MIN_S3_PART_SIZE
from tierflow.rsm import IndexType, LogSegmentData, RemoteResourceNotFoundError, VerificationError
from tierflow.storage.chunked import ChunkedRemoteStorageManager
from tierflow.storage.plain import PlainRemoteStorageManager
from tierflow.storage.s3 import S3ObjectStore
from tierflow.transform.keyring import KeyRing

CHUNK = 1000
SIZES = [0, 1, CHUNK, 3 * CHUNK + 17]
MODES = list(product([False, True], [False, True], SIZES))


@pytest.fixture
def s3_store(moto_server: MotoServer, s3_bucket: str) -> S3ObjectStore:
    return S3ObjectStore(
        s3_bucket, prefix="cluster-a", part_size=MIN_S3_PART_SIZE, client=moto_server.client()
    )


def chunked(store, *, compression: bool, ring: KeyRing | None, chunk: int = CHUNK):
    return ChunkedRemoteStorageManager(
        store,
        "tiered/",
        chunk_size=chunk,
        compression=compression,
        compression_heuristic=False,
        key_ring=ring,
    )


def indexes_of(data: LogSegmentData) -> dict[IndexType, bytes | None]:
    return {
        IndexType.OFFSET: data.offset_index.read_bytes(),
        IndexType.TIMESTAMP: data.time_index.read_bytes(),
        IndexType.PRODUCER_SNAPSHOT: data.producer_snapshot_index.read_bytes(),
        IndexType.LEADER_EPOCH: data.leader_epoch_index,
        IndexType.TRANSACTION: None
        if data.transaction_index is None
        else data.transaction_index.read_bytes(),
    }


@pytest.mark.parametrize(
    ("compression", "encryption", "size"),
    MODES,
    ids=[f"{'zstd' if c else 'raw'}-{'aes' if e else 'clear'}-{s}" for c, e, s in MODES],
)
def test_chunked_round_trip(
    s3_store: S3ObjectStore,
    key_ring: KeyRing,
    tmp_path: Path,
    compression: bool,
    encryption: bool,
    size: int,
):
    ring = key_ring if encryption else None
    content = record_batches(size)[:size]
    data = segment_files(tmp_path / "seg", content, with_txn=size % 2 == 1)
    segment = a_segment()
    infos = chunked(s3_store, compression=compression, ring=ring).copy_log_segment_data(
        segment, data
    )
    keys = [info.key for info in infos]
    assert sorted(s3_store.list()) == sorted(keys)
    reader = chunked(s3_store, compression=False, ring=ring)  # fresh: no cached manifest
    reader.verify(segment, infos)
    manifest = json.loads(s3_store.read_range(keys[2]))
    assert ("encryption" in manifest) is encryption
    assert manifest["compression"] is (compression and size > 0)
    assert reader.fetch_log_segment(segment, 0) == content
    assert b"".join(reader.iter_log_segment(segment)) == content
    for start, length in product([0, 1, CHUNK - 1, CHUNK, CHUNK + 1], [1, CHUNK, 2 * CHUNK]):
        expected = content[start : start + length]
        assert reader.fetch_log_segment(segment, start, start + length - 1) == expected
    for index_type, expected in indexes_of(data).items():
        if expected is None:
            with pytest.raises(RemoteResourceNotFoundError, match="no TRANSACTION index"):
                reader.fetch_index(segment, index_type)
        else:
            assert reader.fetch_index(segment, index_type) == expected
    if not compression and not encryption:
        assert s3_store.read_range(keys[0]) == content, "the .log object IS the segment"


def test_ranged_fetch_gets_only_the_covering_chunks(
    s3_store: S3ObjectStore, key_ring: KeyRing, tmp_path: Path
):
    counting = CountingObjectStore(s3_store)
    rsm = chunked(counting, compression=True, ring=key_ring)
    content = record_batches(10 * CHUNK)[: 10 * CHUNK]
    segment = a_segment()
    rsm.copy_log_segment_data(segment, segment_files(tmp_path / "seg", content, with_txn=True))
    index = rsm.manifest(segment).chunk_index
    counting.reads.clear()
    assert rsm.fetch_log_segment(segment, 3 * CHUNK + 10, 4 * CHUNK + 5) == content[3010:4006]
    c3, c4 = index.chunk(3), index.chunk(4)
    end = c4.transformed_position + c4.transformed_size
    assert counting.reads == [
        (rsm.object_keys(segment)[0], c3.transformed_position, end, end - c3.transformed_position)
    ]


def test_a_segment_larger_than_a_part_goes_up_in_parts_and_verifies(
    s3_store: S3ObjectStore, key_ring: KeyRing, tmp_path: Path
):
    content = record_batches(MIN_S3_PART_SIZE + 300_000)
    rsm = chunked(s3_store, compression=False, ring=key_ring, chunk=256 * 1024)
    segment = a_segment()
    infos = rsm.copy_log_segment_data(
        segment, segment_files(tmp_path / "s", content, with_txn=False)
    )
    head = s3_store.client.head_object(
        Bucket=s3_store.bucket, Key=f"{s3_store.prefix}{infos[0].key}"
    )
    assert head["ETag"].strip('"').endswith("-2")
    rsm.verify(segment, infos)
    middle = MIN_S3_PART_SIZE - 10
    assert rsm.fetch_log_segment(segment, middle, middle + 19) == content[middle : middle + 20]
    assert s3_store.stat(infos[0].key).sha256 == infos[0].sha256


def test_a_failed_copy_leaves_no_objects_and_no_uploads(
    s3_store: S3ObjectStore, key_ring: KeyRing, tmp_path: Path
):
    data = segment_files(tmp_path / "seg", record_batches(MIN_S3_PART_SIZE + 5000), with_txn=True)
    data.transaction_index.unlink()  # the .log goes up (in parts), then the indexes fail
    rsm = chunked(s3_store, compression=False, ring=key_ring, chunk=512 * 1024)
    with pytest.raises(FileNotFoundError):
        rsm.copy_log_segment_data(a_segment(), data)
    assert list(s3_store.list()) == []
    assert s3_store.incomplete_uploads() == []


def test_verify_catches_a_changed_object(s3_store: S3ObjectStore, tmp_path: Path):
    rsm = chunked(s3_store, compression=True, ring=None)
    segment = a_segment()
    infos = rsm.copy_log_segment_data(
        segment, segment_files(tmp_path / "seg", record_batches(4000), with_txn=True)
    )
    stored = s3_store.read_range(infos[0].key)
    s3_store.put_bytes(infos[0].key, stored[:-1] + bytes([stored[-1] ^ 1]))
    with pytest.raises(VerificationError, match=f"{infos[0].key}.*sha256"):
        rsm.verify(segment, infos)
    rsm.delete_log_segment_data(segment)
    rsm.delete_log_segment_data(segment)
    assert list(s3_store.list()) == []


def test_plain_layout_streams_the_log_back(s3_store: S3ObjectStore, tmp_path: Path):
    rsm = PlainRemoteStorageManager(s3_store, "plain/")
    content = record_batches(3 * CHUNK)
    data = segment_files(tmp_path / "s", content, with_txn=True)
    segment = a_segment()
    rsm.verify(segment, rsm.copy_log_segment_data(segment, data))
    assert b"".join(rsm.iter_log_segment(segment)) == content
    assert rsm.fetch_log_segment(segment, CHUNK, 2 * CHUNK - 1) == content[CHUNK : 2 * CHUNK]
    assert rsm.fetch_index(segment, IndexType.TRANSACTION) == data.transaction_index.read_bytes()
