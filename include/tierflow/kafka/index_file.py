"""Shared reading of Kafka's fixed-width index files (.index and .timeindex).

Kafka preallocates the active segment's index and trims it on roll or clean shutdown; after a
crash the file keeps a zero-filled tail, which is not data.
"""

from __future__ import annotations

from pathlib import Path

from tierflow.kafka._fs import read_file_bytes
from tierflow.kafka.errors import CorruptIndexError


def read_index_entries(path: str | Path, entry_size: int, kind: str) -> list[tuple[int, bytes]]:
    """(byte position, raw entry) pairs of an index file, without its zero-filled tail."""
    return index_entries(read_file_bytes(path), entry_size, kind, source=path)


def index_entries(
    data: bytes, entry_size: int, kind: str, *, source: str | Path
) -> list[tuple[int, bytes]]:
    """(byte position, raw entry) pairs of index bytes; ``source`` names them in errors."""
    if len(data) % entry_size:
        raise CorruptIndexError(
            source,
            len(data) - len(data) % entry_size,
            f"{kind} size {len(data)} is not a multiple of the {entry_size}-byte entry size",
        )
    entries = [(pos, data[pos : pos + entry_size]) for pos in range(0, len(data), entry_size)]
    while entries and not any(entries[-1][1]):
        entries.pop()  # a zero-filled preallocated tail is not data
    return entries


def refuse_zero_tail(data: bytes, entry_size: int, kind: str) -> bytes:
    """Index bytes as written, unless their last entry is all zeros.

    Readers drop a zero-filled tail as preallocation, so such an entry (relative offset 0 at
    position 0, or timestamp 0 at relative offset 0) would silently read back as absent.
    Kafka never writes one: its first index entry comes after ``index.interval.bytes`` of log.
    """
    if data and not any(data[-entry_size:]):
        raise ValueError(
            f"{kind}: an all-zero last entry would read back as the zero-filled preallocated tail"
        )
    return data
