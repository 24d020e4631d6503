"""A segment's ``.index``: sparse map from offset to byte position in the ``.log``.

Each 8-byte entry is ``int32 relative offset`` + ``int32 position``; Kafka adds one roughly every
``log.index.interval.bytes`` of log, so a lookup gives a place to start scanning, not the batch.
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

ENTRY = struct.Struct(">ii")
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class OffsetPosition:
    offset: int  # absolute
    position: int


@dataclass
class OffsetIndex:
    base_offset: int
    entries: list[OffsetPosition]

    @classmethod
    def read(
        cls, path: str | Path, base_offset: int, *, log_size: int | None = None
    ) -> OffsetIndex:
        """Read and sanity-check an index; ``log_size`` also checks it against its log."""
        raw_entries = read_index_entries(path, ENTRY.size, "offset index")
        return cls._checked(raw_entries, base_offset, path, log_size)

    @classmethod
    def from_bytes(
        cls, data: bytes, base_offset: int, *, source: str, log_size: int | None = None
    ) -> OffsetIndex:
        """The same checks as :meth:`read` for an index fetched from remote storage.

        ``source`` names the bytes (object key, segment) in errors.
        """
        raw_entries = index_entries(data, ENTRY.size, "offset index", source=source)
        return cls._checked(raw_entries, base_offset, source, log_size)

    @classmethod
    def _checked(
        cls,
        raw_entries: list[tuple[int, bytes]],
        base_offset: int,
        path: str | Path,
        log_size: int | None,
    ) -> OffsetIndex:
        entries: list[OffsetPosition] = []
        for pos, raw in raw_entries:
            relative, position = ENTRY.unpack(raw)
            entry = OffsetPosition(base_offset + relative, position)
            if relative < 0 or position < 0:
                raise CorruptIndexError(path, pos, f"negative entry {relative}/{position}")
            if entries and entry.offset <= entries[-1].offset:
                raise CorruptIndexError(
                    path, pos, f"offset {entry.offset} is not above previous {entries[-1].offset}"
                )
            if entries and entry.position < entries[-1].position:
                raise CorruptIndexError(
                    path, pos, f"position {position} is below previous {entries[-1].position}"
                )
            if log_size is not None and position >= log_size:
                raise CorruptIndexError(
                    path,
                    pos,
                    f"entry for offset {entry.offset} points to byte {position}, "
                    f"past the end of the {log_size}-byte log",
                )
            entries.append(entry)
        return cls(base_offset, entries)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry at or below ``target_offset``; else the segment start."""
        i = bisect.bisect_right([e.offset for e in self.entries], target_offset)
        return self.entries[i - 1] if i else OffsetPosition(self.base_offset, 0)

    def to_bytes(self) -> bytes:
        return offset_index_bytes(self.base_offset, self.entries)


def offset_index_bytes(base_offset: int, entries: Iterable[OffsetPosition]) -> bytes:
    out = bytearray()
    last: OffsetPosition | None = None
    for e in entries:
        relative = e.offset - base_offset
        if not 0 <= relative <= _INT32_MAX or not 0 <= e.position <= _INT32_MAX:
            raise ValueError(f"entry {e} does not fit an index with base offset {base_offset}")
        if last is not None and (e.offset <= last.offset or e.position < last.position):
            raise ValueError(f"index entries must ascend: {e} after {last}")
        out += ENTRY.pack(relative, e.position)
        last = e
    return refuse_zero_tail(bytes(out), ENTRY.size, "offset index")


def write_offset_index(
    path: str | Path, base_offset: int, entries: Iterable[OffsetPosition]
) -> None:
    write_atomically(path, offset_index_bytes(base_offset, entries))
