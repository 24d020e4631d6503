"""zstd per chunk, as Aiven writes it: one frame per chunk, content size in the frame header.

Aiven's reader sizes its output buffer from the frame header (``Zstd.decompressedSize``), so a
frame without the content size is unreadable there; ours refuses such frames too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from itertools import chain

import zstandard

from tierflow.kafka.batch_scan import sound_v2_codec
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.records import CODEC_NONE, LENGTH_OFFSET, LOG_OVERHEAD
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


def split_first_batch(pieces: Iterable[bytes]) -> tuple[bytes, Iterator[bytes]]:
    """The stream's bytes up to the end of its first batch (all of them, if it is shorter), and
    the whole stream again: the heuristic below looks at the first batch before any chunk is
    transformed, and the stream is read only once."""
    stream = iter(pieces)
    taken: list[bytes] = []
    head = bytearray()
    for piece in stream:
        taken.append(piece)
        head += piece
        if len(head) >= LOG_OVERHEAD:
            length = int.from_bytes(head[LENGTH_OFFSET:LOG_OVERHEAD], "big", signed=True)
            if len(head) >= LOG_OVERHEAD + max(length, 0):
                break
    return bytes(head), chain(taken, stream)


def first_batch_compressed(head: bytes, source: str) -> bool:
    """Aiven's compression heuristic: is the segment's FIRST batch already compressed?

    ``head`` holds at least the first batch (``split_first_batch``), which is CRC-checked. A
    missing or invalid first batch counts as compressed, so that the segment is uploaded
    uncompressed, as Aiven does.
    """
    codec = sound_v2_codec(head)  # a sound v2 batch, as nearly every segment starts with
    if codec is not None:
        return codec != CODEC_NONE
    from tierflow.kafka.record_batch import iter_batches_in_buffer  # kafka-python: rare here

    try:
        first = next(iter_batches_in_buffer(head, source=source, validate_crc=True), None)
    except KafkaFormatError as exc:
        log.warning("%s: first batch unreadable (%s); uploading uncompressed", source, exc)
        return True
    if first is None:
        log.warning("%s: no record batch; uploading uncompressed", source)
        return True
    return first.compression_type != CODEC_NONE
