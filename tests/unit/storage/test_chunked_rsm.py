"""The chunked storage manager: round trips over every mode, and the stored bytes themselves.

Each combination of compression, encryption, transaction index and segment size (empty, one
byte, around one chunk, several chunks with a short tail) is copied, verified and read back
whole, by ranges and per index. The stored objects are also decoded by a small independent
reader that follows the reference (plain json, ``cryptography``'s AES-GCM, zstandard) rather
than our own reading code.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from itertools import product
from pathlib import Path

import pytest
import zstandard
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from tests.unit.transform.support import (
    CODEC_GZIP,
    CountingObjectStore,
    a_segment,
    record_batches,
    segment_files,
)
from tierflow.kafka.errors import CorruptRecordError
from tierflow.rsm import (
    IndexType,
    LogSegmentData,
    LogSegmentStream,
    RemoteResourceNotFoundError,
    SegmentFiles,
    VerificationError,
)
from tierflow.storage.chunked import ChunkedRemoteStorageManager
from tierflow.storage.local import LocalDirectoryObjectStore
from tierflow.transform.chunk_index import decode_chunk_sizes
from tierflow.transform.keyring import KeyRing
from tierflow.transform.segment_files import read_segment_files

CHUNK = 1000
SIZES = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 17]
COMBINATIONS = list(product([False, True], [False, True], [False, True], SIZES))


def make_rsm(tmp_path: Path, *, compression: bool, ring: KeyRing | None, **kwargs):
    store = CountingObjectStore(LocalDirectoryObjectStore(tmp_path / "bucket"))
    rsm = ChunkedRemoteStorageManager(
        store,
        "tiered/",
        chunk_size=CHUNK,
        compression=compression,
        compression_heuristic=False,
        key_ring=ring,
        **kwargs,
    )
    return rsm, store


def original_indexes(data: LogSegmentData) -> dict[IndexType, bytes | None]:
    return {
        IndexType.OFFSET: data.offset_index.read_bytes(),
        IndexType.TIMESTAMP: data.time_index.read_bytes(),
        IndexType.PRODUCER_SNAPSHOT: data.producer_snapshot_index.read_bytes(),
        IndexType.LEADER_EPOCH: data.leader_epoch_index,
        IndexType.TRANSACTION: None
        if data.transaction_index is None
        else data.transaction_index.read_bytes(),
    }


def independent_decode(bucket: Path, keys: list[str], ring: KeyRing | None):
    """Decode .log and .indexes from the manifest JSON alone, as reference §9.1 describes."""
    log_key, indexes_key, manifest_key = keys
    manifest = json.loads((bucket / manifest_key).read_bytes())
    index = manifest["chunkIndex"]
    count = -(-index["originalFileSize"] // index["originalChunkSize"])
    if index["type"] == "fixed":
        sizes = [index["transformedChunkSize"]] * (count - 1) + [
            index["finalTransformedChunkSize"]
        ] * (count > 0)
    else:
        frame = base64.b64decode(index["transformedChunks"])
        sizes = decode_chunk_sizes(zstandard.ZstdDecompressor().decompress(frame))
    aead = aad = None
    if "encryption" in manifest:
        assert ring is not None
        aead = AESGCM(ring.unwrap(manifest["encryption"]["dataKey"]))
        aad = base64.b64decode(manifest["encryption"]["aad"])

    def open_blob(blob: bytes) -> bytes:
        return aead.decrypt(blob[:12], blob[12:], aad) if aead and blob else blob

    stored = (bucket / log_key).read_bytes()
    original, position = b"", 0
    for size in sizes:
        plain = open_blob(stored[position : position + size])
        if manifest["compression"]:
            plain = zstandard.ZstdDecompressor().decompress(plain)  # needs the content size
        original += plain
        position += size
    assert position == len(stored)
    indexes_blob = (bucket / indexes_key).read_bytes()
    indexes = {}
    for name, where in manifest["segmentIndexes"].items():
        if where is not None:
            blob = indexes_blob[where["position"] : where["position"] + where["size"]]
            indexes[name] = open_blob(blob)
    return manifest, original, indexes


@pytest.mark.parametrize(
    ("compression", "encryption", "with_txn", "size"),
    COMBINATIONS,
    ids=[
        f"{'zstd' if c else 'raw'}-{'aes' if e else 'clear'}-{'txn' if t else 'notxn'}-{s}"
        for c, e, t, s in COMBINATIONS
    ],
)
def test_round_trip(
    tmp_path: Path, make_ring, compression: bool, encryption: bool, with_txn: bool, size: int
) -> None:
    ring = make_ring("k1") if encryption else None
    rsm, _store = make_rsm(tmp_path, compression=compression, ring=ring)
    content = record_batches(size)[:size]
    data = segment_files(tmp_path / "seg", content, with_txn=with_txn)
    segment = a_segment()

    infos = rsm.copy_log_segment_data(segment, data)
    keys = [info.key for info in infos]
    assert keys == rsm.object_keys(segment)
    assert [k.rsplit(".", 1)[1] for k in keys] == ["log", "indexes", "rsm-manifest"]
    assert keys[0] == (
        f"tiered/orders-{segment.topic_id}/3/00000000000000001000-{segment.segment_id}.log"
    )
    rsm.verify(segment, infos)

    # A fresh manager (no cached manifest or data key) reads everything back.
    reader, _ = make_rsm(tmp_path, compression=False, ring=ring)
    manifest = reader.manifest(segment)
    compressed = compression and size > 0
    assert manifest.compression is compressed
    assert (manifest.encryption is not None) is encryption
    assert manifest.chunk_index.original_file_size == size
    assert type(manifest.chunk_index).__name__ == (
        "VariableSizeChunkIndex" if compressed else "FixedSizeChunkIndex"
    )
    assert reader.fetch_log_segment(segment, 0) == content
    assert b"".join(reader.iter_log_segment(segment)) == content
    for start, length in product(
        [0, 1, 23, CHUNK // 2, CHUNK - 1, CHUNK, CHUNK + 1], [1, 13, CHUNK // 2, CHUNK, 2 * CHUNK]
    ):
        expected = content[start : start + length]
        assert reader.fetch_log_segment(segment, start, start + length - 1) == expected
    assert reader.fetch_log_segment(segment, size + 5) == b""

    for index_type, expected in original_indexes(data).items():
        if expected is None:
            with pytest.raises(RemoteResourceNotFoundError, match="no TRANSACTION index"):
                reader.fetch_index(segment, index_type)
        else:
            assert reader.fetch_index(segment, index_type) == expected

    raw_manifest, decoded, indexes = independent_decode(tmp_path / "bucket", keys, ring)
    assert decoded == content
    assert indexes["offset"] == data.offset_index.read_bytes()
    assert indexes["leaderEpoch"] == data.leader_epoch_index
    assert ("transaction" in indexes) is with_txn
    assert list(raw_manifest) == [
        "version",
        "chunkIndex",
        "segmentIndexes",
        "compression",
        *(["encryption"] if encryption else []),
        "remoteLogSegmentMetadata",
    ]
    if not compression and not encryption:
        # Aiven's base transform: the .log object IS the segment file.
        assert (tmp_path / "bucket" / keys[0]).read_bytes() == content


def test_manifest_details_follow_the_reference(tmp_path: Path, make_ring) -> None:
    rsm, _ = make_rsm(tmp_path, compression=False, ring=make_ring("k1"))
    data = segment_files(tmp_path / "seg", b"z" * 2500, with_txn=False, empty_snapshot=True)
    segment = a_segment(end=1099)
    rsm.copy_log_segment_data(segment, data)
    raw = json.loads((tmp_path / "bucket" / rsm.object_keys(segment)[2]).read_bytes())
    assert raw["chunkIndex"] == {
        "type": "fixed",
        "originalChunkSize": CHUNK,
        "originalFileSize": 2500,
        "transformedChunkSize": CHUNK + 28,
        "finalTransformedChunkSize": 500 + 28,
    }
    offset_size = data.offset_index.stat().st_size + 28
    time_size = data.time_index.stat().st_size + 28
    assert raw["segmentIndexes"] == {
        "offset": {"position": 0, "size": offset_size},
        "timestamp": {"position": offset_size, "size": time_size},
        "producerSnapshot": {"position": offset_size + time_size, "size": 0},  # empty: 0 bytes
        "leaderEpoch": {
            "position": offset_size + time_size,
            "size": len(data.leader_epoch_index) + 28,
        },
        "transaction": None,
    }
    assert raw["encryption"]["dataKey"].startswith("k1:")
    assert len(base64.b64decode(raw["encryption"]["aad"])) == 32
    metadata = raw["remoteLogSegmentMetadata"]
    assert metadata["remoteLogSegmentId"] == {
        "topicIdPartition": {
            "topicId": segment.topic_id,
            "topicPartition": {"topic": "orders", "partition": 3},
        },
        "id": segment.segment_id,
    }
    # Epoch 4 was in force at offset 1000, epoch 5 starts inside the segment.
    assert metadata["segmentLeaderEpochs"] == {"4": 1000, "5": 1040}
    assert metadata["maxTimestampMs"] == 1_790_000_000_300  # the time index's last entry
    assert (metadata["startOffset"], metadata["endOffset"]) == (1000, 1099)


def test_ranged_read_fetches_only_the_covering_chunks(tmp_path: Path, make_ring) -> None:
    rsm, store = make_rsm(tmp_path, compression=True, ring=make_ring("k1"))
    content = record_batches(10 * CHUNK)[: 10 * CHUNK]
    segment = a_segment()
    rsm.copy_log_segment_data(segment, segment_files(tmp_path / "seg", content, with_txn=True))
    index = rsm.manifest(segment).chunk_index
    log_key = rsm.object_keys(segment)[0]
    store.reads.clear()
    rsm.bytes_read = 0

    assert rsm.fetch_log_segment(segment, 3 * CHUNK + 10, 4 * CHUNK + 5) == content[3010:4006]
    c3, c4 = index.chunk(3), index.chunk(4)
    assert store.reads == [
        (log_key, c3.transformed_position, c4.transformed_position + c4.transformed_size,
         c3.transformed_size + c4.transformed_size)
    ]  # fmt: skip
    assert rsm.bytes_read == c3.transformed_size + c4.transformed_size
    assert rsm.bytes_read < index.transformed_file_size / 4

    # A long range is read in runs of at most 8 chunks, never one huge GET.
    store.reads.clear()
    assert rsm.fetch_log_segment(segment, 0) == content
    assert [(start, end) for _key, start, end, _n in store.reads] == [
        (0, index.chunk(8).transformed_position),
        (index.chunk(8).transformed_position, index.transformed_file_size),
    ]


def test_compression_heuristic_reads_the_first_batch(tmp_path: Path) -> None:
    store = LocalDirectoryObjectStore(tmp_path / "bucket")
    rsm = ChunkedRemoteStorageManager(store, chunk_size=CHUNK, compression=True)
    plain, gzipped = a_segment(), a_segment()
    uncompressed = record_batches(5000)
    already = record_batches(5000, codec=CODEC_GZIP)
    rsm.copy_log_segment_data(plain, segment_files(tmp_path / "a", uncompressed, with_txn=False))
    rsm.copy_log_segment_data(gzipped, segment_files(tmp_path / "b", already, with_txn=False))
    assert rsm.manifest(plain).compression is True
    assert rsm.manifest(gzipped).compression is False
    assert store.stat(rsm.object_keys(plain)[0]).size < len(uncompressed) / 2
    assert rsm.fetch_log_segment(gzipped, 0) == already
    # Not a record batch at all: uploaded uncompressed, as Aiven does.
    junk = a_segment()
    rsm.copy_log_segment_data(junk, segment_files(tmp_path / "c", b"\x07" * 3000, with_txn=False))
    assert rsm.manifest(junk).compression is False


def test_upload_streams_chunk_by_chunk(tmp_path: Path, make_ring) -> None:
    import tracemalloc

    chunk = 64 * 1024
    store = CountingObjectStore(LocalDirectoryObjectStore(tmp_path / "bucket"))
    rsm = ChunkedRemoteStorageManager(
        store, chunk_size=chunk, compression=True, compression_heuristic=False,
        key_ring=make_ring("k1"),
    )  # fmt: skip
    content = record_batches(6 << 20)
    data = segment_files(tmp_path / "seg", content, with_txn=False)
    del content
    tracemalloc.start()
    rsm.copy_log_segment_data(a_segment(), data)
    _current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert max(store.put_chunk_sizes) <= chunk + 28 + 64
    assert len(store.put_chunk_sizes) > 90
    assert peak < 8 * chunk, f"peak {peak} bytes while uploading a 6 MiB segment"


def test_failed_copy_leaves_no_objects(tmp_path: Path) -> None:
    rsm, store = make_rsm(tmp_path, compression=True, ring=None)
    data = segment_files(tmp_path / "seg", b"q" * 3000, with_txn=True)
    data.transaction_index.unlink()
    with pytest.raises(FileNotFoundError):
        rsm.copy_log_segment_data(a_segment(), data)
    assert list(store.list()) == []
    assert not [p for p in (tmp_path / "bucket").rglob("*") if p.is_file()]


def test_failure_while_streaming_the_log_leaves_nothing(tmp_path: Path) -> None:
    rsm, _ = make_rsm(tmp_path, compression=False, ring=None)
    data = segment_files(tmp_path / "seg", b"q" * 3000, with_txn=False)
    data.log_segment.unlink()
    data.log_segment.mkdir()  # stat works, reading fails mid-upload
    with pytest.raises(IsADirectoryError, match=r"00000000000000001000\.log"):
        rsm.copy_log_segment_data(a_segment(), data)
    assert not [p for p in (tmp_path / "bucket").rglob("*") if p.is_file()]


@pytest.mark.parametrize("piece", [1, 700, CHUNK, 3 * CHUNK + 5])
def test_a_stream_in_any_pieces_uploads_what_the_files_upload(tmp_path: Path, piece: int) -> None:
    """Chunk boundaries, compression choice and indexes depend on the bytes, not the pieces."""
    rsm, store = make_rsm(tmp_path, compression=True, ring=None)
    data = segment_files(tmp_path / "seg", record_batches(4000), with_txn=True)
    from_files = rsm.copy_log_segment_data(a_segment(), data)
    uploaded = {info.key: store.read_range(info.key) for info in from_files}
    log_bytes = data.log_segment.read_bytes()
    pieces = (log_bytes[i : i + piece] for i in range(0, len(log_bytes), piece))
    files = read_segment_files(data)
    from_stream = rsm.copy_log_segment_stream(a_segment(), LogSegmentStream(pieces, lambda: files))
    assert [(i.size, i.sha256) for i in from_stream[:2]] == [
        (i.size, i.sha256) for i in from_files[:2]
    ]
    manifest = json.loads(store.read_range(from_stream[2].key))
    assert manifest["chunkIndex"] == json.loads(uploaded[from_files[2].key])["chunkIndex"]


def test_a_stream_that_fails_half_way_leaves_nothing(tmp_path: Path, make_ring) -> None:
    """A merge that dies while building its segment: chunks already went up, then nothing."""
    rsm, _ = make_rsm(tmp_path, compression=True, ring=make_ring("k1"))
    log_bytes = record_batches(4000)

    def pieces() -> Iterator[bytes]:
        yield from (log_bytes[i : i + 700] for i in range(0, len(log_bytes), 700))
        raise CorruptRecordError("wal/object-1", 4096, "CRC mismatch")

    def files() -> SegmentFiles:  # never asked: the stream failed first
        raise AssertionError("asked for the indexes of a segment that was never finished")

    with pytest.raises(CorruptRecordError, match="wal/object-1"):
        rsm.copy_log_segment_stream(a_segment(), LogSegmentStream(pieces(), files))
    assert not [p for p in (tmp_path / "bucket").rglob("*") if p.is_file()]


def test_verify_catches_a_changed_object_and_a_bad_manifest(tmp_path: Path) -> None:
    rsm, store = make_rsm(tmp_path, compression=True, ring=None)
    segment = a_segment()
    infos = rsm.copy_log_segment_data(
        segment, segment_files(tmp_path / "seg", record_batches(4000), with_txn=True)
    )
    log_path = tmp_path / "bucket" / infos[0].key
    original = log_path.read_bytes()
    log_path.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    with pytest.raises(VerificationError, match="sha256"):
        rsm.verify(segment, infos)
    log_path.write_bytes(original)
    manifest_path = tmp_path / "bucket" / infos[2].key
    manifest_path.write_bytes(b'{"version":"1"}')
    forged = [infos[0], infos[1], store.stat(infos[2].key)]
    forged[2] = type(infos[2])(infos[2].key, forged[2].size, _sha(manifest_path))
    with pytest.raises(VerificationError, match="rsm-manifest"):
        rsm.verify(segment, forged)


def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_delete_is_idempotent(tmp_path: Path) -> None:
    rsm, store = make_rsm(tmp_path, compression=False, ring=None)
    segment = a_segment()
    rsm.copy_log_segment_data(segment, segment_files(tmp_path / "s", b"abc", with_txn=False))
    rsm.delete_log_segment_data(segment)
    rsm.delete_log_segment_data(segment)
    assert list(store.list()) == []
    with pytest.raises(RemoteResourceNotFoundError, match="no manifest"):
        rsm.fetch_log_segment(segment, 0)
