"""Where each chunk lies, in the original file and in the transformed ``.log`` object.

Two shapes, as in Aiven's manifest: ``fixed`` when every full chunk transforms to the same size
(no compression), ``variable`` otherwise, listing every transformed size through
ChunkSizesBinaryCodec, zstd and base64. Chunk i always starts at ``i * originalChunkSize`` in
the original file, so finding the chunks of a byte range is a division, not a search.
"""

from __future__ import annotations

import base64
import struct
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from typing import Any

import zstandard

INT32_MAX = 2**31 - 1
# Aiven's TransformedChunksDeserializer refuses to inflate more than this.
MAX_DECODED_SIZES_BYTES = 10 * 1024 * 1024
_ZSTD_LEVEL = 3  # zstd-jni's default; the level does not affect compatibility


@dataclass(frozen=True)
class Chunk:
    id: int
    original_position: int
    original_size: int
    transformed_position: int
    transformed_size: int


def chunk_count(original_file_size: int, original_chunk_size: int) -> int:
    return -(-original_file_size // original_chunk_size)


class ChunkIndex:
    """Shared arithmetic of both index shapes; subclasses give the transformed sizes."""

    original_chunk_size: int
    original_file_size: int

    def transformed_sizes(self) -> list[int]:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    @property
    def chunk_count(self) -> int:
        return chunk_count(self.original_file_size, self.original_chunk_size)

    @cached_property
    def _transformed_positions(self) -> list[int]:
        return [0, *accumulate(self.transformed_sizes())]

    @property
    def transformed_file_size(self) -> int:
        """Size of the ``.log`` object: the transformed chunks back to back."""
        return self._transformed_positions[-1]

    def chunk(self, chunk_id: int) -> Chunk:
        count = self.chunk_count
        if not 0 <= chunk_id < count:
            raise IndexError(f"chunk {chunk_id} out of range (the file has {count} chunks)")
        start = chunk_id * self.original_chunk_size
        positions = self._transformed_positions
        return Chunk(
            id=chunk_id,
            original_position=start,
            original_size=min(self.original_chunk_size, self.original_file_size - start),
            transformed_position=positions[chunk_id],
            transformed_size=positions[chunk_id + 1] - positions[chunk_id],
        )

    def chunks(self) -> list[Chunk]:
        return [self.chunk(i) for i in range(self.chunk_count)]

    def chunk_for_original_offset(self, offset: int) -> Chunk | None:
        """Aiven's findChunkForOriginalOffset: None past the end of the file."""
        if not 0 <= offset < self.original_file_size:
            return None
        return self.chunk(offset // self.original_chunk_size)

    def chunks_for_range(self, start: int, end_inclusive: int) -> list[Chunk]:
        """The chunks holding original bytes [start, end_inclusive], clipped to the file."""
        end_inclusive = min(end_inclusive, self.original_file_size - 1)
        if start < 0 or start > end_inclusive:
            return []
        first = start // self.original_chunk_size
        last = end_inclusive // self.original_chunk_size
        return [self.chunk(i) for i in range(first, last + 1)]

    def chunk_for_transformed_position(self, position: int) -> int:
        """Id of the chunk whose transformed bytes contain ``position`` (for error messages)."""
        return max(0, bisect_right(self._transformed_positions, position) - 1)


@dataclass(frozen=True)
class FixedSizeChunkIndex(ChunkIndex):
    original_chunk_size: int
    original_file_size: int
    transformed_chunk_size: int
    final_transformed_chunk_size: int

    def transformed_sizes(self) -> list[int]:
        count = self.chunk_count
        if count == 0:
            return []
        return [self.transformed_chunk_size] * (count - 1) + [self.final_transformed_chunk_size]

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "fixed",
            "originalChunkSize": self.original_chunk_size,
            "originalFileSize": self.original_file_size,
            "transformedChunkSize": self.transformed_chunk_size,
            "finalTransformedChunkSize": self.final_transformed_chunk_size,
        }


@dataclass(frozen=True)
class VariableSizeChunkIndex(ChunkIndex):
    original_chunk_size: int
    original_file_size: int
    transformed_chunks: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.transformed_chunks) != self.chunk_count:
            raise ValueError(
                f"{len(self.transformed_chunks)} transformed chunk sizes for a file of "
                f"{self.original_file_size} bytes in chunks of {self.original_chunk_size} "
                f"({self.chunk_count} chunks)"
            )

    def transformed_sizes(self) -> list[int]:
        return list(self.transformed_chunks)

    def to_json(self) -> dict[str, Any]:
        return {
            "type": "variable",
            "originalChunkSize": self.original_chunk_size,
            "originalFileSize": self.original_file_size,
            "transformedChunks": encode_transformed_chunks(self.transformed_chunks),
        }


def build_chunk_index(
    original_chunk_size: int,
    original_file_size: int,
    transformed_sizes: Sequence[int],
    *,
    fixed_transformed_chunk_size: int | None,
) -> ChunkIndex:
    """The index of a finished transform; ``fixed_transformed_chunk_size`` None: variable.

    For a fixed index every chunk but the last must have exactly that size, as Aiven's
    FixedSizeChunkIndexBuilder checks. An empty file gets a fixed index whose final chunk
    size is 0, like Aiven's.
    """
    if original_chunk_size <= 0 or original_chunk_size > INT32_MAX:
        raise ValueError(f"chunk size {original_chunk_size} outside [1, {INT32_MAX}]")
    if not 0 <= original_file_size <= INT32_MAX:
        raise ValueError(f"file size {original_file_size} outside [0, {INT32_MAX}]")
    if fixed_transformed_chunk_size is None:
        return VariableSizeChunkIndex(
            original_chunk_size, original_file_size, tuple(transformed_sizes)
        )
    leading, final = list(transformed_sizes[:-1]), transformed_sizes[-1:] or [0]
    if any(size != fixed_transformed_chunk_size for size in leading):
        raise ValueError(f"non-final chunks must all be {fixed_transformed_chunk_size} bytes")
    index = FixedSizeChunkIndex(
        original_chunk_size, original_file_size, fixed_transformed_chunk_size, final[0]
    )
    if len(transformed_sizes) != index.chunk_count:
        raise ValueError(
            f"{len(transformed_sizes)} chunks transformed, expected {index.chunk_count}"
        )
    return index


def chunk_index_from_json(value: object) -> ChunkIndex:
    """Parse ``chunkIndex``; ValueError names the offending field."""
    if not isinstance(value, dict):
        raise ValueError("chunkIndex: expected an object")
    kind = value.get("type")
    fields = {
        "fixed": {
            "type",
            "originalChunkSize",
            "originalFileSize",
            "transformedChunkSize",
            "finalTransformedChunkSize",
        },
        "variable": {"type", "originalChunkSize", "originalFileSize", "transformedChunks"},
    }
    if kind not in fields:
        raise ValueError(f"chunkIndex.type: expected 'fixed' or 'variable', got {kind!r}")
    require_exact_fields(value, fields[kind], "chunkIndex")
    chunk_size = json_int(value, "originalChunkSize", "chunkIndex", minimum=1)
    file_size = json_int(value, "originalFileSize", "chunkIndex")
    if kind == "fixed":
        return FixedSizeChunkIndex(
            chunk_size,
            file_size,
            json_int(value, "transformedChunkSize", "chunkIndex"),
            json_int(value, "finalTransformedChunkSize", "chunkIndex"),
        )
    encoded = value["transformedChunks"]
    if not isinstance(encoded, str):
        raise ValueError("chunkIndex.transformedChunks: expected a base64 string")
    return VariableSizeChunkIndex(chunk_size, file_size, tuple(decode_transformed_chunks(encoded)))


def json_int(obj: dict[str, Any], name: str, where: str, *, minimum: int = 0) -> int:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{where}.{name}: expected an integer, got {value!r}")
    if not minimum <= value <= INT32_MAX:
        raise ValueError(f"{where}.{name}: {value} outside [{minimum}, {INT32_MAX}]")
    return value


def require_exact_fields(obj: dict[str, Any], expected: set[str], where: str) -> None:
    """Aiven's reader fails on unknown properties, and ours refuses them too."""
    unknown = sorted(set(obj) - expected)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {', '.join(unknown)}")
    missing = sorted(expected - set(obj))
    if missing:
        raise ValueError(f"{where}: missing field(s) {', '.join(missing)}")


# -- ChunkSizesBinaryCodec --------------------------------------------------------------------


def _bytes_needed(value: int) -> int:
    return 1 if value <= 0xFF else 2 if value <= 0xFFFF else 3 if value <= 0xFFFFFF else 4


def encode_chunk_sizes(sizes: Sequence[int]) -> bytes:
    """Big-endian: count; then for two or more values a base, a width and the deltas of all but
    the last value, which is stored in full (so a short final chunk does not widen the rest)."""
    if any(size < 0 or size > INT32_MAX for size in sizes):
        raise ValueError("chunk sizes must be in [0, 2^31-1]")
    if not sizes:
        return struct.pack(">i", 0)
    if len(sizes) == 1:
        return struct.pack(">ii", 1, sizes[0])
    leading = sizes[:-1]
    base = min(leading)
    width = max(_bytes_needed(size - base) for size in leading)
    out = bytearray(struct.pack(">iiB", len(sizes), base, width))
    for size in leading:
        out += (size - base).to_bytes(width, "big")
    out += struct.pack(">i", sizes[-1])
    return bytes(out)


def decode_chunk_sizes(data: bytes) -> list[int]:
    if len(data) < 4:
        raise ValueError(f"chunk sizes: {len(data)} bytes, need at least 4")
    (count,) = struct.unpack_from(">i", data)
    if count < 0:
        raise ValueError(f"chunk sizes: negative count {count}")
    if count == 0:
        expected = 4
    elif count == 1:
        expected = 8
    else:
        if len(data) < 9:
            raise ValueError(f"chunk sizes: {len(data)} bytes, need at least 9 for {count}")
        width = data[8]
        if not 1 <= width <= 4:
            raise ValueError(f"chunk sizes: bytes per value {width} outside [1, 4]")
        expected = 9 + (count - 1) * width + 4
    if len(data) != expected:
        raise ValueError(f"chunk sizes: {len(data)} bytes, expected {expected} for {count}")
    if count == 0:
        return []
    if count == 1:
        sizes = [struct.unpack_from(">i", data, 4)[0]]
    else:
        (base,) = struct.unpack_from(">i", data, 4)
        sizes = [
            base + int.from_bytes(data[at : at + width], "big")
            for at in range(9, 9 + (count - 1) * width, width)
        ]
        sizes.append(struct.unpack_from(">i", data, expected - 4)[0])
    # Every shape is checked: a lone negative size once slipped through as a chunk size.
    if any(size < 0 or size > INT32_MAX for size in sizes):
        raise ValueError("chunk sizes: a decoded size is outside [0, 2^31-1]")
    return sizes


def encode_transformed_chunks(sizes: Sequence[int]) -> str:
    """``transformedChunks``: the codec's bytes in one zstd frame with its content size, base64."""
    raw = encode_chunk_sizes(sizes)
    if len(raw) > MAX_DECODED_SIZES_BYTES:
        raise ValueError(f"{len(sizes)} chunk sizes encode to more than 10 MiB")
    frame = zstandard.ZstdCompressor(level=_ZSTD_LEVEL, write_content_size=True).compress(raw)
    return base64.b64encode(frame).decode("ascii")


def decode_transformed_chunks(text: str) -> list[int]:
    try:
        frame = base64.b64decode(text, validate=True)
    except ValueError as exc:  # binascii.Error, or non-ASCII text
        raise ValueError(f"chunkIndex.transformedChunks: not base64 ({exc})") from None
    try:
        size = zstandard.frame_content_size(frame)
    except zstandard.ZstdError as exc:
        raise ValueError(f"chunkIndex.transformedChunks: not a zstd frame ({exc})") from None
    if not 0 <= size <= MAX_DECODED_SIZES_BYTES:
        raise ValueError(
            f"chunkIndex.transformedChunks: frame content size {size} outside [0, 10 MiB]"
        )
    try:
        raw = zstandard.ZstdDecompressor().decompress(frame)
    except zstandard.ZstdError as exc:
        raise ValueError(f"chunkIndex.transformedChunks: bad zstd frame ({exc})") from None
    return decode_chunk_sizes(raw)
