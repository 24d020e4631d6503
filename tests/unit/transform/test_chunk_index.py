"""ChunkSizesBinaryCodec, the transformedChunks encoding and chunk arithmetic."""

from __future__ import annotations

import base64
import random

import pytest
import zstandard

from tierflow.transform.chunk_index import (
    FixedSizeChunkIndex,
    VariableSizeChunkIndex,
    build_chunk_index,
    chunk_index_from_json,
    decode_chunk_sizes,
    decode_transformed_chunks,
    encode_chunk_sizes,
    encode_transformed_chunks,
)

# Aiven's ChunkIndexSerializationTest / ChunkSizesBinaryCodec vector (reference §2.4).
REPO_VECTOR = "KLUv/SAPeQAAAAAAAwAAAAoBAAoAAAAe"


def test_published_codec_vector_byte_for_byte() -> None:
    raw = encode_chunk_sizes([10, 20, 30])
    assert raw.hex() == "000000030000000a01000a0000001e"
    assert encode_transformed_chunks([10, 20, 30]) == REPO_VECTOR
    assert decode_transformed_chunks(REPO_VECTOR) == [10, 20, 30]


def test_reference_second_vector_with_a_short_last_chunk() -> None:
    sizes = [1_000_000, 1_000_010, 1_000_020, 500]
    raw = encode_chunk_sizes(sizes)
    assert raw.hex() == "00000004000f424001000a14000001f4"
    assert encode_transformed_chunks(sizes) == "KLUv/SAQgQAAAAAABAAPQkABAAoUAAAB9A=="


def test_frame_carries_the_content_size() -> None:
    frame = base64.b64decode(encode_transformed_chunks([5, 6, 7, 8]))
    assert zstandard.frame_content_size(frame) == len(encode_chunk_sizes([5, 6, 7, 8]))


@pytest.mark.parametrize(
    ("sizes", "length"),
    [
        pytest.param([], 4, id="no-sizes"),
        pytest.param([7], 8, id="one-size"),
        # equal leading values: 1 byte each, all zero
        pytest.param([4, 4, 4, 1], 4 + 4 + 1 + 3 * 1 + 4, id="equal-leading-values"),
        pytest.param([0, 0x100, 5], 4 + 4 + 1 + 2 * 2 + 4, id="2-byte-values"),
        pytest.param([0, 0x10000, 5], 4 + 4 + 1 + 2 * 3 + 4, id="3-byte-values"),
        pytest.param([0, 0x1000000, 5], 4 + 4 + 1 + 2 * 4 + 4, id="4-byte-values"),
        # the last value is not in the minimum
        pytest.param([100, 200, 0], 4 + 4 + 1 + 2 * 1 + 4, id="last-value-not-in-the-minimum"),
    ],
)
def test_codec_lengths_and_round_trip(sizes: list[int], length: int) -> None:
    raw = encode_chunk_sizes(sizes)
    assert len(raw) == length
    assert decode_chunk_sizes(raw) == sizes


def test_equal_leading_values_store_zero_bytes() -> None:
    raw = encode_chunk_sizes([9, 9, 9, 3])
    assert raw[8] == 1 and raw[9:12] == b"\x00\x00\x00"


def test_random_round_trips() -> None:
    rng = random.Random(3)
    for _ in range(200):
        base = rng.randrange(0, 2**30)
        spread = rng.choice([0, 200, 300, 70_000, 2**24 + 5])
        sizes = [base + rng.randrange(spread + 1) for _ in range(rng.randrange(2, 60))]
        assert decode_transformed_chunks(encode_transformed_chunks(sizes)) == sizes


def test_codec_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        encode_chunk_sizes([1, -1])
    with pytest.raises(ValueError, match="expected"):
        decode_chunk_sizes(encode_chunk_sizes([1, 2, 3])[:-1])
    with pytest.raises(ValueError, match="not base64"):
        decode_transformed_chunks("%%%")
    without_size = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    frame = without_size.compress(encode_chunk_sizes([1, 2])) + without_size.flush()
    with pytest.raises(ValueError, match="content size"):
        decode_transformed_chunks(base64.b64encode(frame).decode())


def test_fixed_index_materialises_like_aiven() -> None:
    index = FixedSizeChunkIndex(100, 250, 110, 30)
    assert [(c.original_position, c.original_size) for c in index.chunks()] == [
        (0, 100),
        (100, 100),
        (200, 50),
    ]
    assert [(c.transformed_position, c.transformed_size) for c in index.chunks()] == [
        (0, 110),
        (110, 110),
        (220, 30),
    ]
    assert index.transformed_file_size == 250
    assert index.chunk_for_original_offset(199).id == 1
    assert index.chunk_for_original_offset(250) is None
    assert [c.id for c in index.chunks_for_range(99, 100)] == [0, 1]
    assert [c.id for c in index.chunks_for_range(240, 10_000)] == [2]


def test_variable_index_positions_are_prefix_sums() -> None:
    index = VariableSizeChunkIndex(100, 250, (10, 20, 30))
    assert [c.transformed_position for c in index.chunks()] == [0, 10, 30]
    assert index.transformed_file_size == 60
    with pytest.raises(ValueError, match="3 chunks"):
        VariableSizeChunkIndex(100, 250, (10, 20))


def test_aiven_index_json_examples_round_trip() -> None:
    fixed = {
        "type": "fixed",
        "originalChunkSize": 100,
        "originalFileSize": 250,
        "transformedChunkSize": 110,
        "finalTransformedChunkSize": 30,
    }
    variable = {
        "type": "variable",
        "originalChunkSize": 100,
        "originalFileSize": 250,
        "transformedChunks": REPO_VECTOR,
    }
    for example in (fixed, variable):
        parsed = chunk_index_from_json(example)
        assert parsed.to_json() == example
        assert list(parsed.to_json()) == list(example)  # Jackson's field order


def test_empty_file_gets_a_fixed_index_with_no_chunks() -> None:
    index = build_chunk_index(100, 0, [], fixed_transformed_chunk_size=128)
    assert index.to_json() == {
        "type": "fixed",
        "originalChunkSize": 100,
        "originalFileSize": 0,
        "transformedChunkSize": 128,
        "finalTransformedChunkSize": 0,
    }
    assert index.chunks() == [] and index.chunks_for_range(0, 10) == []


def test_fixed_builder_checks_the_leading_sizes() -> None:
    with pytest.raises(ValueError, match="non-final"):
        build_chunk_index(100, 250, [110, 109, 30], fixed_transformed_chunk_size=110)


@pytest.mark.parametrize(
    "bad",
    [
        {"type": "fixed", "originalChunkSize": 100, "originalFileSize": 250,
         "transformedChunkSize": 110, "finalTransformedChunkSize": 30, "extra": 1},
        {"type": "fixed", "originalChunkSize": 100, "originalFileSize": 250,
         "transformedChunkSize": 110},
        {"type": "chunky", "originalChunkSize": 100, "originalFileSize": 250},
        {"type": "fixed", "originalChunkSize": "100", "originalFileSize": 250,
         "transformedChunkSize": 110, "finalTransformedChunkSize": 30},
    ],
    ids=["unknown-key", "missing-final-chunk-size", "unknown-type", "size-as-a-string"],
)  # fmt: skip
def test_index_json_is_parsed_strictly(bad: dict) -> None:
    with pytest.raises(ValueError):
        chunk_index_from_json(bad)
