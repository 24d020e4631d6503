"""Decode failures name what failed; key rotation and re-wrapping keep segments readable."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tierflow.rsm import IndexType
from tierflow.storage.chunked import ChunkedRemoteStorageManager
from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.transform.errors import CorruptChunkError, DataKeyError, ManifestError

from .support import a_segment, record_batches, segment_files

CHUNK = 1000


def rsm_for(tmp_path: Path, ring, *, compression: bool = True) -> ChunkedRemoteStorageManager:
    return ChunkedRemoteStorageManager(
        LocalDirectoryObjectStore(tmp_path / "bucket"),
        chunk_size=CHUNK,
        compression=compression,
        compression_heuristic=False,
        key_ring=ring,
    )


def stored(tmp_path: Path, rsm, segment) -> dict[str, bytes]:
    return {k: (tmp_path / "bucket" / k).read_bytes() for k in rsm.object_keys(segment)}


@pytest.fixture
def copied(tmp_path: Path, make_ring):
    """A 5-chunk compressed, encrypted segment under key k1."""
    content = record_batches(5 * CHUNK)[: 5 * CHUNK - 3]
    segment = a_segment()
    writer = rsm_for(tmp_path, make_ring("k1"))
    writer.copy_log_segment_data(segment, segment_files(tmp_path / "s", content, with_txn=True))
    return segment, content


def test_unknown_key_id_is_named_and_nothing_is_returned(tmp_path, make_ring, copied) -> None:
    segment, _ = copied
    reader = rsm_for(tmp_path, make_ring("k2"))
    with pytest.raises(DataKeyError, match="key id 'k1' is not in the key ring") as caught:
        reader.fetch_log_segment(segment, 0)
    assert caught.value.key_id == "k1"
    assert caught.value.key.endswith(".rsm-manifest")
    stream = reader.iter_log_segment(segment)
    with pytest.raises(DataKeyError, match="'k1'"):
        next(stream)  # fails before yielding any byte
    with pytest.raises(DataKeyError):
        reader.fetch_index(segment, IndexType.OFFSET)


def test_missing_key_ring_is_named(tmp_path, copied) -> None:
    segment, _ = copied
    with pytest.raises(DataKeyError, match="key id 'k1' and no key ring is configured"):
        rsm_for(tmp_path, None).fetch_log_segment(segment, 0, 10)


def test_wrong_key_under_the_right_id(tmp_path, key_files, copied) -> None:
    from tierflow.transform.keyring import KeyRing, load_key_pair

    segment, _ = copied
    impostor = KeyRing("k1", [load_key_pair("k1", *key_files["k3"])])
    with pytest.raises(DataKeyError, match=r"key id 'k1'.*does not unwrap"):
        rsm_for(tmp_path, impostor).fetch_log_segment(segment, 0)


def test_corrupted_chunk_names_object_and_chunk(tmp_path, make_ring, copied) -> None:
    segment, content = copied
    reader = rsm_for(tmp_path, make_ring("k1"))
    index = reader.manifest(segment).chunk_index
    log_key = reader.object_keys(segment)[0]
    path = tmp_path / "bucket" / log_key
    blob = bytearray(path.read_bytes())
    blob[index.chunk(2).transformed_position + 20] ^= 0x40
    path.write_bytes(bytes(blob))
    reader = rsm_for(tmp_path, make_ring("k1"))
    assert reader.fetch_log_segment(segment, 0, 2 * CHUNK - 1) == content[: 2 * CHUNK]
    with pytest.raises(CorruptChunkError, match="chunk 2: AES-GCM tag mismatch") as caught:
        reader.fetch_log_segment(segment, 2 * CHUNK + 5, 2 * CHUNK + 6)
    assert caught.value.key == log_key and caught.value.chunk == 2
    with pytest.raises(CorruptChunkError, match="chunk 2"):
        b"".join(reader.iter_log_segment(segment))


def test_truncated_log_object_is_reported(tmp_path, make_ring, copied) -> None:
    segment, _ = copied
    reader = rsm_for(tmp_path, make_ring("k1"))
    log_key = reader.object_keys(segment)[0]
    path = tmp_path / "bucket" / log_key
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(CorruptChunkError, match="chunk 4: object ends at byte"):
        reader.fetch_log_segment(segment, 4 * CHUNK)


def test_corrupt_manifest_names_the_key(tmp_path, make_ring, copied) -> None:
    segment, _ = copied
    reader = rsm_for(tmp_path, make_ring("k1"))
    manifest_key = reader.object_keys(segment)[2]
    (tmp_path / "bucket" / manifest_key).write_bytes(b'{"version":"1","chunkIndex":')
    with pytest.raises(ManifestError) as caught:
        reader.fetch_log_segment(segment, 0)
    assert caught.value.key == manifest_key
    assert manifest_key in str(caught.value)


def test_rotation_then_rewrap_touches_only_manifests(tmp_path, key_files, copied) -> None:
    from tierflow.transform.keyring import KeyRing, load_key_pair

    old_segment, old_content = copied
    ring = KeyRing("k1", [load_key_pair("k1", *key_files["k1"])])
    ring.add_key("k2", *key_files["k2"], activate=True)
    rsm = rsm_for(tmp_path, ring)
    assert rsm.fetch_log_segment(old_segment, 0) == old_content  # old key still on the ring

    new_segment = a_segment(start=2000, end=2099)
    new_content = record_batches(2500, seed=9)
    rsm.copy_log_segment_data(
        new_segment, segment_files(tmp_path / "n", new_content, with_txn=False)
    )
    assert rsm.manifest(new_segment).encryption.key_id == "k2"
    assert rsm.rewrap(new_segment) is None  # already under the active key

    before = stored(tmp_path, rsm, old_segment)
    info = rsm.rewrap(old_segment)
    after = stored(tmp_path, rsm, old_segment)
    log_key, indexes_key, manifest_key = rsm.object_keys(old_segment)
    assert info is not None and info.key == manifest_key
    assert info.sha256 == hashlib.sha256(after[manifest_key]).hexdigest()
    for key in (log_key, indexes_key):
        assert hashlib.sha256(after[key]).digest() == hashlib.sha256(before[key]).digest()
    assert after[manifest_key] != before[manifest_key]
    assert b'"dataKey":"k2:' in after[manifest_key]
    assert rsm.rewrap(old_segment) is None

    # k1 can now leave the ring: both segments read with k2 alone.
    only_k2 = KeyRing("k2", [load_key_pair("k2", *key_files["k2"])])
    reader = rsm_for(tmp_path, only_k2)
    assert reader.fetch_log_segment(old_segment, 0) == old_content
    assert reader.fetch_log_segment(new_segment, 0) == new_content
    assert reader.fetch_index(old_segment, IndexType.TRANSACTION)


def test_rewrap_of_an_unencrypted_segment_is_a_no_op(tmp_path, make_ring) -> None:
    segment = a_segment()
    rsm_for(tmp_path, None).copy_log_segment_data(
        segment, segment_files(tmp_path / "s", b"abc" * 500, with_txn=False)
    )
    assert rsm_for(tmp_path, make_ring("k1")).rewrap(segment) is None
