"""zstd per chunk, as Aiven writes it: one frame per chunk, content size in the frame header.

Aiven's reader sizes its output buffer from the frame header (``Zstd.decompressedSize``), so a
frame without the content size is unreadable there; ours refuses such frames too.
"""

from __future__ import annotations

import logging
from pathlib import Path

import zstandard

from tierflow.kafka.batch_builder import CODEC_NONE
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.record_batch import iter_batches
from tierflow.transform.errors import CorruptChunkError

log = logging.getLogger(__name__)

LEVEL = 3  # zstd-jni's default
# Chunk sizes are Java ints in Aiven's chunk index; no chunk decodes to more.
MAX_CHUNK_SIZE = 2**31 - 1


class ChunkCompressor:
    """Reuses one zstd context across chunks; not for concurrent use from several threads."""

    def __init__(self, level: int = LEVEL) -> None:
        self._compressor = zstandard.ZstdCompressor(level=level, write_content_size=True)

    def compress(self, chunk: bytes) -> bytes:
        return self._compressor.compress(chunk)


def decompress_chunk(
    frame: bytes, *, object_key: str, chunk: int | str, expected_size: int | None = None
) -> bytes:
    """The chunk's original bytes; ``expected_size`` (from the chunk index) bounds the output.

    The frame header's content size sizes the output buffer, so a damaged header claiming
    terabytes must be refused before decoding rather than end in a MemoryError.
    """
    try:
        size = zstandard.frame_content_size(frame)
    except zstandard.ZstdError as exc:
        raise CorruptChunkError(object_key, chunk, f"not a zstd frame ({exc})") from None
    if size < 0:
        raise CorruptChunkError(object_key, chunk, "zstd frame without its content size")
    limit = MAX_CHUNK_SIZE if expected_size is None else expected_size
    if size > limit:
        raise CorruptChunkError(
            object_key, chunk, f"zstd frame declares {size} bytes, more than the chunk's {limit}"
        )
    try:
        return zstandard.ZstdDecompressor().decompress(frame, max_output_size=size)
    except zstandard.ZstdError as exc:
        raise CorruptChunkError(object_key, chunk, f"zstd frame does not decode ({exc})") from None


def first_batch_compressed(log_segment: Path) -> bool:
    """Aiven's compression heuristic: is the segment's FIRST batch already compressed?

    Only the first batch is read, CRC-checked. A missing or invalid first batch counts as
    compressed, so that the segment is uploaded uncompressed, as Aiven does.
    """
    try:
        first = next(iter_batches(log_segment, validate_crc=True), None)
    except KafkaFormatError as exc:
        log.warning("%s: first batch unreadable (%s); uploading uncompressed", log_segment, exc)
        return True
    if first is None:
        log.warning("%s: no record batch; uploading uncompressed", log_segment)
        return True
    return first.compression_type != CODEC_NONE
