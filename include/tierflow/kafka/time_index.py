"""A segment's ``.timeindex``: maps timestamps to offsets for ListOffsets-by-time.

Each 12-byte entry is ``int64 timestamp`` + ``int32 relative offset`` and means "records with a
larger timestamp are at this offset or later".
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tierflow.kafka._fs import write_atomically
from tierflow.kafka.errors import CorruptIndexError
from tierflow.kafka.index_file import index_entries, read_index_entries, refuse_zero_tail

ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class TimestampOffset:
    timestamp: int
    offset: int  # absolute


@dataclass
class TimeIndex:
    base_offset: int
    entries: list[TimestampOffset]

    @classmethod
    def read(
        cls, path: str | Path, base_offset: int, *, last_offset: int | None = None
    ) -> TimeIndex:
        """Read and sanity-check; ``last_offset`` (of the log) rejects entries beyond it."""
        raw_entries = read_index_entries(path, ENTRY.size, "time index")
        return cls._checked(raw_entries, base_offset, path, last_offset)

    @classmethod
    def from_bytes(
        cls, data: bytes, base_offset: int, *, source: str, last_offset: int | None = None
    ) -> TimeIndex:
        """The same checks as :meth:`read` for an index fetched from remote storage.

        ``source`` names the bytes (object key, segment) in errors.
        """
        raw_entries = index_entries(data, ENTRY.size, "time index", source=source)
        return cls._checked(raw_entries, base_offset, source, last_offset)

    @classmethod
    def _checked(
        cls,
        raw_entries: list[tuple[int, bytes]],
        base_offset: int,
        path: str | Path,
        last_offset: int | None,
    ) -> TimeIndex:
        entries: list[TimestampOffset] = []
        for pos, raw in raw_entries:
            timestamp, relative = ENTRY.unpack(raw)
            entry = TimestampOffset(timestamp, base_offset + relative)
            if relative < 0:
                raise CorruptIndexError(path, pos, f"negative relative offset {relative}")
            if entries and (
                entry.timestamp < entries[-1].timestamp or entry.offset < entries[-1].offset
            ):
                raise CorruptIndexError(
                    path, pos, f"entry {timestamp}/{entry.offset} goes back from {entries[-1]}"
                )
            if last_offset is not None and entry.offset > last_offset:
                raise CorruptIndexError(
                    path,
                    pos,
                    f"entry points to offset {entry.offset}, past the log's last offset "
                    f"{last_offset}",
                )
            entries.append(entry)
        return cls(base_offset, entries)

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The largest entry with a timestamp at or below ``timestamp``; else the segment start."""
        i = bisect.bisect_right([e.timestamp for e in self.entries], timestamp)
        return self.entries[i - 1] if i else TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def to_bytes(self) -> bytes:
        return time_index_bytes(self.base_offset, self.entries)


def time_index_bytes(base_offset: int, entries: Iterable[TimestampOffset]) -> bytes:
    out = bytearray()
    last: TimestampOffset | None = None
    for e in entries:
        relative = e.offset - base_offset
        if not 0 <= relative <= _INT32_MAX:
            raise ValueError(f"entry {e} does not fit an index with base offset {base_offset}")
        if last is not None and (e.timestamp < last.timestamp or e.offset < last.offset):
            raise ValueError(f"time index entries must ascend: {e} after {last}")
        out += ENTRY.pack(e.timestamp, relative)
        last = e
    return refuse_zero_tail(bytes(out), ENTRY.size, "time index")


def write_time_index(
    path: str | Path, base_offset: int, entries: Iterable[TimestampOffset]
) -> None:
    write_atomically(path, time_index_bytes(base_offset, entries))
