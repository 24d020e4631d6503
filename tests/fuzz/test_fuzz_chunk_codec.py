"""Properties of the chunked layout: the chunk sizes codec, the chunk index, the manifest,
and the chunk transform (zstd, AES-256-GCM) read back through ranged reads."""

from __future__ import annotations

import base64
import json

import zstandard
from hypothesis import assume, example, given
from hypothesis import strategies as st

from tests.fuzz.support import counted, mutated
from tierflow.storage.chunk_reader import read_chunk_run
from tierflow.transform.chunk_index import (
    ChunkIndex,
    build_chunk_index,
    chunk_index_from_json,
    decode_chunk_sizes,
    decode_transformed_chunks,
    encode_chunk_sizes,
    encode_transformed_chunks,
)
from tierflow.transform.compression import ChunkCompressor, decompress_chunk
from tierflow.transform.encryption import DataKey, decrypt_chunk, encrypt_chunk
from tierflow.transform.errors import CorruptChunkError, ManifestError
from tierflow.transform.manifest import (
    EncryptionMetadata,
    IndexRange,
    SegmentIndexes,
    SegmentManifest,
)
from tierflow.transform.pipeline import ChunkTransform, LogTransform

OPTIONAL_TOP_KEYS = {"encryption", "remoteLogSegmentMetadata"}

INT32_MAX = 2**31 - 1
sizes = st.integers(0, INT32_MAX)
KEY = "tiered/orders-3/00000000000000001000-seg.log"


class BlobStore:
    """The one ObjectStore call the chunk reader makes, over bytes in memory."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob

    def read_range(self, key: str, start: int = 0, end: int | None = None) -> bytes:
        return self.blob[start:end]


# -- ChunkSizesBinaryCodec and transformedChunks ----------------------------------------------


@given(st.lists(sizes, max_size=40))
@counted
def test_chunk_sizes_round_trip(values: list[int]) -> None:
    assert decode_chunk_sizes(encode_chunk_sizes(values)) == values
    assert decode_transformed_chunks(encode_transformed_chunks(values)) == values


@given(
    st.one_of(st.binary(max_size=60), mutated(st.lists(sizes, max_size=8).map(encode_chunk_sizes)))
)
@example(bytes.fromhex("00000001fffffffb"))  # found: one chunk of size -5 was accepted
@counted
def test_chunk_sizes_any_bytes(data: bytes) -> None:
    """Accepted bytes are exactly the encoding of what they decode to, or ValueError."""
    try:
        values = decode_chunk_sizes(data)
    except ValueError as exc:
        assert str(exc).startswith("chunk sizes:")
        return
    assert all(0 <= v <= INT32_MAX for v in values)
    assert decode_chunk_sizes(encode_chunk_sizes(values)) == values


@given(
    st.one_of(
        st.text(max_size=40),
        st.binary(max_size=60).map(lambda b: base64.b64encode(b).decode()),
        st.binary(max_size=60).map(
            lambda b: base64.b64encode(zstandard.ZstdCompressor().compress(b)).decode()
        ),
        mutated(st.lists(sizes, max_size=8).map(encode_transformed_chunks).map(str.encode)).map(
            lambda b: b.decode("latin-1")
        ),
    )
)
@example(text="\x80")  # found: non-ASCII text raised a ValueError that named no field
@counted
def test_transformed_chunks_any_text(text: str) -> None:
    try:
        decode_transformed_chunks(text)
    except ValueError as exc:
        assert "chunk" in str(exc)


# -- chunk index and manifest -----------------------------------------------------------------


@st.composite
def chunk_indexes(draw: st.DrawFn) -> ChunkIndex:
    chunk_size = draw(st.integers(1, 5000))
    file_size = draw(st.integers(0, min(40_000, 200 * chunk_size)))
    count = -(-file_size // chunk_size)
    if draw(st.booleans()):
        fixed = draw(st.integers(0, 6000))
        transformed = [fixed] * max(0, count - 1) + [draw(st.integers(0, 6000))] * min(1, count)
        return build_chunk_index(
            chunk_size, file_size, transformed, fixed_transformed_chunk_size=fixed
        )
    transformed = draw(st.lists(st.integers(0, 6000), min_size=count, max_size=count))
    return build_chunk_index(chunk_size, file_size, transformed, fixed_transformed_chunk_size=None)


ranges = st.builds(IndexRange, sizes, sizes)
manifests = st.builds(
    SegmentManifest,
    chunk_index=chunk_indexes(),
    segment_indexes=st.builds(SegmentIndexes, ranges, ranges, ranges, ranges, st.none() | ranges),
    compression=st.booleans(),
    encryption=st.none()
    | st.builds(
        EncryptionMetadata,
        data_key=st.builds(
            lambda i, k: f"{i}:{base64.b64encode(k).decode()}",
            st.text("abcdefgh-_0123456789", min_size=1, max_size=8),
            st.binary(max_size=40),
        ),
        aad=st.binary(max_size=32),
    ),
    remote_log_segment_metadata=st.none()
    | st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=3),
)


@given(manifests)
@counted
def test_manifest_round_trip(manifest: SegmentManifest) -> None:
    parsed = SegmentManifest.parse(manifest.to_bytes(), object_key=KEY)
    assert parsed.to_json() == manifest.to_json()
    assert parsed.chunk_index.chunks() == manifest.chunk_index.chunks()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def edited_manifests(draw: st.DrawFn) -> bytes:
    """A valid manifest with one field, at any depth, replaced by some other JSON value."""
    doc = draw(manifests).to_json()
    node = doc
    while True:
        key = draw(st.sampled_from(sorted(node)))
        if isinstance(node[key], dict) and node[key] and draw(st.booleans()):
            node = node[key]
            continue
        if draw(st.integers(0, 4)) == 0:
            del node[key]
        else:
            node[key] = draw(json_values)
        return json.dumps(doc).encode()


def _decoded(doc: dict) -> dict:
    """The manifest JSON with transformedChunks as sizes: zstd frames of the same sizes differ.

    The format has no checksum over them (Aiven writes none), so a changed frame that still
    decodes is a changed index; the chunk reader's length checks catch what it misplaces. An
    optional key given as null says what its absence says, and is written back absent.
    """
    index = doc["chunkIndex"]
    if index.get("type") == "variable":
        index = index | {"transformedChunks": decode_transformed_chunks(index["transformedChunks"])}
    present = {k: v for k, v in doc.items() if not (k in OPTIONAL_TOP_KEYS and v is None)}
    return present | {"chunkIndex": index}


@given(
    st.one_of(
        st.binary(max_size=80),
        mutated(manifests.map(SegmentManifest.to_bytes)),
        edited_manifests(),
    )
)
@counted
def test_manifest_any_bytes(data: bytes) -> None:
    """A ManifestError naming the object, or a manifest that writes back to equivalent JSON."""
    try:
        manifest = SegmentManifest.parse(data, object_key=KEY)
    except ManifestError as exc:
        assert str(exc).startswith(KEY + ": ")
        return
    again = SegmentManifest.parse(manifest.to_bytes(), object_key=KEY)
    assert _decoded(again.to_json()) == _decoded(manifest.to_json()) == _decoded(json.loads(data))
    manifest.chunk_index.chunks()  # the arithmetic works on whatever was accepted


@given(chunk_indexes(), st.data())
@counted
def test_chunk_index_json_round_trip(index: ChunkIndex, data: st.DataObject) -> None:
    assert chunk_index_from_json(index.to_json()).chunks() == index.chunks()
    chunks = index.chunks()
    assert sum(c.original_size for c in chunks) == index.original_file_size
    if index.original_file_size:
        offset = data.draw(st.integers(0, index.original_file_size - 1))
        found = index.chunk_for_original_offset(offset)
        assert found.original_position <= offset < found.original_position + found.original_size


# -- the chunk transform ----------------------------------------------------------------------


@st.composite
def transformed_segments(draw: st.DrawFn) -> tuple[bytes, int, ChunkTransform]:
    original = draw(
        st.one_of(st.binary(max_size=3000), st.binary(max_size=40).map(lambda b: b * 50))
    )
    chunk_size = draw(st.integers(1, 700))
    data_key = DataKey.generate() if draw(st.booleans()) else None
    return original, chunk_size, ChunkTransform(compression=draw(st.booleans()), data_key=data_key)


def _upload(
    original: bytes, chunk_size: int, transform: ChunkTransform
) -> tuple[bytes, ChunkIndex]:
    stream = LogTransform([original], chunk_size, transform, source="00000000000000001000.log")
    blob = b"".join(stream)
    return blob, stream.chunk_index()


@given(transformed_segments(), st.data())
@counted
def test_ranged_reads_return_the_original_slice(
    segment: tuple[bytes, int, ChunkTransform], data: st.DataObject
) -> None:
    """Any [start, end) read through the chunk index decodes only its chunks, exactly."""
    original, chunk_size, transform = segment
    blob, index = _upload(original, chunk_size, transform)
    assert index.original_file_size == len(original)
    assert index.transformed_file_size == len(blob)
    index = chunk_index_from_json(json.loads(json.dumps(index.to_json())))
    start = data.draw(st.integers(0, len(original)))
    end = data.draw(st.integers(start, len(original) + 5))
    chunks = index.chunks_for_range(start, end - 1)
    if not chunks:
        assert original[start:end] == b""
        return
    pieces, read = read_chunk_run(
        BlobStore(blob), KEY, index, transform, chunks[0].id, chunks[-1].id
    )
    skip = start - chunks[0].original_position
    assert b"".join(pieces)[skip : skip + end - start] == original[start:end]
    assert read == sum(c.transformed_size for c in chunks)


@given(transformed_segments(), st.data())
@counted
def test_corrupted_chunk_is_named(
    segment: tuple[bytes, int, ChunkTransform], data: st.DataObject
) -> None:
    """Encrypted chunks catch any changed bit through the GCM tag, and say which chunk."""
    original, chunk_size, transform = segment
    assume(original)
    blob, index = _upload(original, chunk_size, transform)
    assume(blob)
    at = data.draw(st.integers(0, len(blob) - 1))
    damaged = bytearray(blob)
    damaged[at] ^= 1 << data.draw(st.integers(0, 7))
    hit = index.chunk_for_transformed_position(at)
    try:
        pieces, _ = read_chunk_run(BlobStore(bytes(damaged)), KEY, index, transform, hit, hit)
    except CorruptChunkError as exc:
        assert exc.chunk == hit and f"chunk {hit}:" in str(exc) and KEY in str(exc)
        return
    # Only plain or zstd-only chunks (no checksum in the format) can decode after a change.
    assert transform.data_key is None
    assert len(pieces[0]) == index.chunk(hit).original_size


@given(transformed_segments(), st.data())
@counted
def test_short_object_is_named(
    segment: tuple[bytes, int, ChunkTransform], data: st.DataObject
) -> None:
    original, chunk_size, transform = segment
    blob, index = _upload(original, chunk_size, transform)
    assume(blob)
    cut = data.draw(st.integers(0, len(blob) - 1))
    last = index.chunk_count - 1
    try:
        read_chunk_run(BlobStore(blob[:cut]), KEY, index, transform, 0, last)
    except CorruptChunkError as exc:
        assert exc.chunk == index.chunk_for_transformed_position(cut)
        return
    raise AssertionError(f"an object cut at {cut} of {len(blob)} bytes was read")


@given(
    st.one_of(
        st.binary(max_size=80),
        mutated(st.binary(max_size=300).map(ChunkCompressor().compress)),
    ),
    st.integers(0, 400),
)
# The regression the property found: 'hello' with the header's content size set to 2^40.
@example(
    frame=bytes.fromhex("28b52ffde0")
    + (2**40).to_bytes(8, "little")
    + bytes.fromhex("29000068656c6c6f"),
    expected_size=5,
)
@counted
def test_zstd_frame_any_bytes(frame: bytes, expected_size: int) -> None:
    """Found a frame header claiming 2^40 bytes raising MemoryError; now a CorruptChunkError."""
    try:
        plain = decompress_chunk(frame, object_key=KEY, chunk=4, expected_size=expected_size)
    except CorruptChunkError as exc:
        assert exc.chunk == 4
        return
    assert len(plain) <= expected_size


@given(st.binary(max_size=200), st.data())
@counted
def test_gcm_rejects_any_change(plain: bytes, data: st.DataObject) -> None:
    key = DataKey.generate()
    blob = bytearray(encrypt_chunk(plain, key))
    assert decrypt_chunk(bytes(blob), key, object_key=KEY, chunk=2) == plain
    edited = data.draw(mutated(st.just(bytes(blob))))
    assume(edited != bytes(blob))
    try:
        decrypt_chunk(edited, key, object_key=KEY, chunk=2)
    except CorruptChunkError as exc:
        assert exc.chunk == 2
        return
    raise AssertionError("an altered AES-GCM chunk decrypted")
