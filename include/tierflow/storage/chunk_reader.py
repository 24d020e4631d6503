"""Reading chunks back: one ranged GET for a run of adjacent chunks, then each is decoded.

Aiven makes one GET per chunk; a run of adjacent chunks is one contiguous byte range of the
``.log`` object, so we fetch it at once (same bytes, fewer requests).
"""

from __future__ import annotations

from tierflow.storage.object_store import ObjectStore
from tierflow.transform.chunk_index import ChunkIndex
from tierflow.transform.errors import CorruptChunkError
from tierflow.transform.pipeline import ChunkTransform


def read_chunk_run(
    objects: ObjectStore,
    log_key: str,
    index: ChunkIndex,
    transform: ChunkTransform,
    first: int,
    last: int,
) -> tuple[list[bytes], int]:
    """Original bytes of chunks ``first..last``, and how many stored bytes were read."""
    head, tail = index.chunk(first), index.chunk(last)
    start = head.transformed_position
    end = tail.transformed_position + tail.transformed_size
    blob = objects.read_range(log_key, start, end)
    if len(blob) != end - start:
        short_chunk = index.chunk_for_transformed_position(start + len(blob))
        raise CorruptChunkError(
            log_key,
            short_chunk,
            f"object ends at byte {start + len(blob)}, the manifest places chunks up to {end}",
        )
    decoded = []
    for chunk_id in range(first, last + 1):
        chunk = index.chunk(chunk_id)
        at = chunk.transformed_position - start
        plain = transform.backward(
            blob[at : at + chunk.transformed_size],
            object_key=log_key,
            chunk=chunk_id,
            expected_size=chunk.original_size,
        )
        if len(plain) != chunk.original_size:
            raise CorruptChunkError(
                log_key,
                chunk_id,
                f"decodes to {len(plain)} bytes, the manifest says {chunk.original_size}",
            )
        decoded.append(plain)
    return decoded, len(blob)
