"""A segment's ``.index``: sparse map from offset to byte position in the ``.log``.

Each 8-byte entry is ``int32 relative offset`` + ``int32 position``; Kafka adds one roughly every
``log.index.interval.bytes`` of log, so a lookup gives a place to start scanning, not the batch.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from dataclasses import dataclass
from operator import le, lt
from pathlib import Path
from typing import BinaryIO

from tierflow.kafka._fs import read_file_bytes
from tierflow.kafka.errors import MissingFileError
from tierflow.kafka.index_file import INT32_MAX, SparseIndex, trim_zero_tail

ENTRY = struct.Struct(">ii")


@dataclass(frozen=True)
class OffsetPosition:
    offset: int  # absolute
    position: int


@dataclass
class OffsetIndex(SparseIndex[OffsetPosition]):
    ENTRY = ENTRY
    KIND = "offset index"

    @classmethod
    def read(
        cls, path: str | Path, base_offset: int, *, log_size: int | None = None
    ) -> OffsetIndex:
        """Read and sanity-check an index; ``log_size`` also checks it against its log."""
        return cls._read(path, base_offset, log_size)

    @classmethod
    def check(cls, path: str | Path, base_offset: int, *, log_size: int) -> None:
        """The checks of :meth:`read` without building the entries: a copy checks every
        rolled segment's index, thousands of entries each. Only a bad index is read the slow
        way, for the error that names its byte."""
        data, _ = trim_zero_tail(read_file_bytes(path), ENTRY.size)
        if len(data) % ENTRY.size or not _looks_valid(data, log_size):
            cls.read(path, base_offset, log_size=log_size)

    @classmethod
    def from_bytes(
        cls, data: bytes, base_offset: int, *, source: str, log_size: int | None = None
    ) -> OffsetIndex:
        """The same checks as :meth:`read` for an index fetched from remote storage.

        ``source`` names the bytes (object key, segment) in errors.
        """
        return cls._parse(data, base_offset, source, log_size)

    @classmethod
    def last_entry(cls, path: str | Path, base_offset: int) -> OffsetPosition | None:
        """The index's last entry, by a binary search over 8-byte reads: an active segment's
        index is preallocated (``segment.index.bytes``, 10 MiB by default, nearly all zeros),
        and reading it whole costs milliseconds per partition. Kafka adds an entry only after
        ``index.interval.bytes`` of log, so a used slot never has position 0 and an unused one
        always has. None when it has none or is not whole entries. Not checked against its log:
        the caller does that with the batch it points at."""
        try:
            with open(path, "rb") as index:
                size = os.fstat(index.fileno()).st_size
                if size % ENTRY.size:
                    return None
                low, high = 0, size // ENTRY.size  # slots below low are used, from high on not
                while low < high:
                    middle = (low + high) // 2
                    if _slot(index, middle)[1] > 0:
                        low = middle + 1
                    else:
                        high = middle
                if low == 0:
                    return None
                relative, position = _slot(index, low - 1)
                return OffsetPosition(base_offset + relative, position)
        except FileNotFoundError as exc:
            raise MissingFileError(path, None, "file does not exist") from exc

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The largest entry at or below ``target_offset``; else the segment start."""
        keys = [e.offset for e in self.entries]
        return self._at_or_below(keys, target_offset, OffsetPosition(self.base_offset, 0))

    @classmethod
    def _unpack(cls, raw: bytes, base_offset: int) -> OffsetPosition:
        relative, position = ENTRY.unpack(raw)
        return OffsetPosition(base_offset + relative, position)

    @classmethod
    def _read_problem(
        cls,
        entry: OffsetPosition,
        relative: int,
        previous: OffsetPosition | None,
        log_size: int | None,
    ) -> str | None:
        position = entry.position
        if relative < 0 or position < 0:
            return f"negative entry {relative}/{position}"
        if previous is not None and entry.offset <= previous.offset:
            return f"offset {entry.offset} is not above previous {previous.offset}"
        if previous is not None and position < previous.position:
            return f"position {position} is below previous {previous.position}"
        if log_size is not None and position >= log_size:
            return (
                f"entry for offset {entry.offset} points to byte {position}, "
                f"past the end of the {log_size}-byte log"
            )
        return None

    @classmethod
    def _write_problem(
        cls, entry: OffsetPosition, last: OffsetPosition | None, base_offset: int
    ) -> str | None:
        if not 0 <= entry.position <= INT32_MAX:
            return f"entry {entry} does not fit an index with base offset {base_offset}"
        if last is not None and (entry.offset <= last.offset or entry.position < last.position):
            return f"index entries must ascend: {entry} after {last}"
        return None

    @classmethod
    def _pack(cls, entry: OffsetPosition, relative: int) -> bytes:
        return ENTRY.pack(relative, entry.position)


offset_index_bytes = OffsetIndex.entries_bytes
write_offset_index = OffsetIndex.write_file


def _looks_valid(data: bytes, log_size: int) -> bool:
    """Offsets rise strictly and positions never fall, none negative or past the log: in C
    loops over the two columns (``array``), not a Python object per entry."""
    words = array("i", data)
    if sys.byteorder == "little":
        words.byteswap()  # the file is big-endian
    offsets, positions = words[0::2], words[1::2]
    if not offsets:
        return True
    return (
        min(offsets) >= 0
        and min(positions) >= 0
        and max(positions) < log_size
        and all(map(lt, offsets, offsets[1:]))
        and all(map(le, positions, positions[1:]))
    )


def _slot(index: BinaryIO, slot: int) -> tuple[int, int]:
    """One entry, relative offset and position, read in place."""
    index.seek(slot * ENTRY.size)
    return ENTRY.unpack(index.read(ENTRY.size))
