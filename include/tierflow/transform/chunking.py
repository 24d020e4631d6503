"""Cutting a segment into fixed-size chunks, streamed: only about one chunk is in memory."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from tierflow.copy_quota import throttle


def read_chunks(path: Path, chunk_size: int, start: int = 0) -> Iterator[bytes]:
    """Chunks of exactly ``chunk_size`` bytes from byte ``start`` on, the last one shorter;
    never an empty chunk. A broker's file is read within its copy quota (copy_quota.py)."""
    _check(chunk_size)
    with open(path, "rb") as handle:
        handle.seek(start)
        while True:
            chunk = handle.read(chunk_size)
            if not chunk:
                return
            throttle(path, len(chunk))
            yield chunk


def rechunk(pieces: Iterable[bytes], chunk_size: int) -> Iterator[bytes]:
    """The same cut from pieces of any size (a merge yields one batch at a time): chunk
    boundaries depend only on the bytes, never on how they arrived."""
    _check(chunk_size)
    buffer = bytearray()
    for piece in pieces:
        if not buffer and len(piece) == chunk_size:
            yield bytes(piece)  # already a chunk: no copy through the buffer
            continue
        buffer += piece
        if len(buffer) >= chunk_size:
            view = memoryview(buffer)
            cut = len(buffer) - len(buffer) % chunk_size
            for start in range(0, cut, chunk_size):
                yield bytes(view[start : start + chunk_size])
            view.release()
            del buffer[:cut]
    if buffer:
        yield bytes(buffer)


def _check(chunk_size: int) -> None:
    if chunk_size <= 0:
        raise ValueError(f"chunk size must be positive, got {chunk_size}")
