"""What Kafka's fixed-width index files (.index and .timeindex) share.

Kafka preallocates the active segment's index and trims it on roll or clean shutdown; after a
crash the file keeps a zero-filled tail, which is not data.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Generic, Protocol, Self, TypeVar

from tierflow.kafka._fs import read_file_bytes, write_atomically
from tierflow.kafka.errors import CorruptIndexError

INT32_MAX = 2**31 - 1


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


def trim_zero_tail(data: bytes, entry_size: int) -> tuple[bytes, int]:
    """Index bytes without their zero-filled preallocated tail, and how many slots it had.

    Kafka trims a segment's indexes when it rolls (``trimToValidSize``); a broker killed first
    leaves the preallocated zeros, which an independent reader takes for entries that do not
    increase. Bytes that are not whole entries are returned as they are, for the reader to refuse.
    """
    if len(data) % entry_size:
        return data, 0
    used = len(bytes(data).rstrip(b"\0"))  # in C: a preallocated 10 MiB is a million slots
    end = -(-used // entry_size) * entry_size  # the entry holding the last non-zero byte stays
    return data[:end], (len(data) - end) // entry_size


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


class _Entry(Protocol):
    @property
    def offset(self) -> int: ...


E = TypeVar("E", bound=_Entry)


@dataclass
class SparseIndex(Generic[E]):
    """The part ``.index`` and ``.timeindex`` share: ascending fixed-width entries whose offset is
    stored relative to the segment's base offset, checked on read and on write, and searched for
    the last entry at or below a key.

    A subclass gives the entry layout (``ENTRY``), its name in errors (``KIND``), how one entry
    unpacks and packs, and what makes one entry wrong.
    """

    base_offset: int
    entries: list[E]

    ENTRY: ClassVar[struct.Struct]
    KIND: ClassVar[str]

    @classmethod
    def _read(cls, path: str | Path, base_offset: int, bound: int | None) -> Self:
        raw_entries = read_index_entries(path, cls.ENTRY.size, cls.KIND)
        return cls._checked(raw_entries, base_offset, path, bound)

    @classmethod
    def _parse(cls, data: bytes, base_offset: int, source: str, bound: int | None) -> Self:
        raw_entries = index_entries(data, cls.ENTRY.size, cls.KIND, source=source)
        return cls._checked(raw_entries, base_offset, source, bound)

    @classmethod
    def _checked(
        cls,
        raw_entries: list[tuple[int, bytes]],
        base_offset: int,
        path: str | Path,
        bound: int | None,
    ) -> Self:
        entries: list[E] = []
        for pos, raw in raw_entries:
            entry = cls._unpack(raw, base_offset)
            previous = entries[-1] if entries else None
            problem = cls._read_problem(entry, entry.offset - base_offset, previous, bound)
            if problem is not None:
                raise CorruptIndexError(path, pos, problem)
            entries.append(entry)
        return cls(base_offset, entries)

    @classmethod
    def entries_bytes(cls, base_offset: int, entries: Iterable[E]) -> bytes:
        """The file's bytes; ValueError for entries Kafka could not have written."""
        out = bytearray()
        last: E | None = None
        for e in entries:
            relative = e.offset - base_offset
            if not 0 <= relative <= INT32_MAX:
                raise ValueError(f"entry {e} does not fit an index with base offset {base_offset}")
            problem = cls._write_problem(e, last, base_offset)
            if problem is not None:
                raise ValueError(problem)
            out += cls._pack(e, relative)
            last = e
        return refuse_zero_tail(bytes(out), cls.ENTRY.size, cls.KIND)

    @classmethod
    def write_file(cls, path: str | Path, base_offset: int, entries: Iterable[E]) -> None:
        """The file of ``entries``, written whole or not at all (see ``entries_bytes``)."""
        write_atomically(path, cls.entries_bytes(base_offset, entries))

    @classmethod
    def valid_file_bytes(cls, path: str | Path) -> tuple[bytes, int]:
        """The file's bytes as a trimmed index holds them, and the zero-filled slots dropped."""
        return trim_zero_tail(read_file_bytes(path), cls.ENTRY.size)

    def to_bytes(self) -> bytes:
        return self.entries_bytes(self.base_offset, self.entries)

    def _at_or_below(self, keys: list[int], target: int, start: E) -> E:
        """The last entry whose key (``keys`` run parallel to the entries) is at most ``target``;
        ``start``, where the segment begins, when there is none."""
        i = bisect.bisect_right(keys, target)
        return self.entries[i - 1] if i else start

    @classmethod
    def _unpack(cls, raw: bytes, base_offset: int) -> E:
        raise NotImplementedError

    @classmethod
    def _read_problem(
        cls, entry: E, relative: int, previous: E | None, bound: int | None
    ) -> str | None:
        """Why an entry read from a file cannot be Kafka's, or None."""
        raise NotImplementedError

    @classmethod
    def _write_problem(cls, entry: E, last: E | None, base_offset: int) -> str | None:
        """Why an entry (whose relative offset fits) must not be written, or None."""
        raise NotImplementedError

    @classmethod
    def _pack(cls, entry: E, relative: int) -> bytes:
        raise NotImplementedError
