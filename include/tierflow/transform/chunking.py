"""Cutting a file into fixed-size chunks, streamed: only one chunk is in memory at a time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def read_chunks(path: Path, chunk_size: int) -> Iterator[bytes]:
    """Chunks of exactly ``chunk_size`` bytes, the last one shorter; never an empty chunk."""
    if chunk_size <= 0:
        raise ValueError(f"chunk size must be positive, got {chunk_size}")
    with open(path, "rb") as handle:
        while True:
            chunk = handle.read(chunk_size)
            if not chunk:
                return
            yield chunk
