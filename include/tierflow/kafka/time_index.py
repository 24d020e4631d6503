"""A segment's ``.timeindex``: maps timestamps to offsets for ListOffsets-by-time.

Each 12-byte entry is ``int64 timestamp`` + ``int32 relative offset`` and means "records with a
larger timestamp are at this offset or later".
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.kafka.index_file import SparseIndex

ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


@dataclass(frozen=True)
class TimestampOffset:
    timestamp: int
    offset: int  # absolute


@dataclass
class TimeIndex(SparseIndex[TimestampOffset]):
    ENTRY = ENTRY
    KIND = "time index"

    @classmethod
    def read(
        cls, path: str | Path, base_offset: int, *, last_offset: int | None = None
    ) -> TimeIndex:
        """Read and sanity-check; ``last_offset`` (of the log) rejects entries beyond it."""
        return cls._read(path, base_offset, last_offset)

    @classmethod
    def from_bytes(
        cls, data: bytes, base_offset: int, *, source: str, last_offset: int | None = None
    ) -> TimeIndex:
        """The same checks as :meth:`read` for an index fetched from remote storage.

        ``source`` names the bytes (object key, segment) in errors.
        """
        return cls._parse(data, base_offset, source, last_offset)

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The largest entry with a timestamp at or below ``timestamp``; else the segment start."""
        keys = [e.timestamp for e in self.entries]
        return self._at_or_below(keys, timestamp, TimestampOffset(NO_TIMESTAMP, self.base_offset))

    @classmethod
    def _unpack(cls, raw: bytes, base_offset: int) -> TimestampOffset:
        timestamp, relative = ENTRY.unpack(raw)
        return TimestampOffset(timestamp, base_offset + relative)

    @classmethod
    def _read_problem(
        cls,
        entry: TimestampOffset,
        relative: int,
        previous: TimestampOffset | None,
        last_offset: int | None,
    ) -> str | None:
        if relative < 0:
            return f"negative relative offset {relative}"
        if previous is not None and (
            entry.timestamp < previous.timestamp or entry.offset < previous.offset
        ):
            return f"entry {entry.timestamp}/{entry.offset} goes back from {previous}"
        if last_offset is not None and entry.offset > last_offset:
            return (
                f"entry points to offset {entry.offset}, past the log's last offset {last_offset}"
            )
        return None

    @classmethod
    def _write_problem(
        cls, entry: TimestampOffset, last: TimestampOffset | None, base_offset: int
    ) -> str | None:
        if last is not None and (entry.timestamp < last.timestamp or entry.offset < last.offset):
            return f"time index entries must ascend: {entry} after {last}"
        return None

    @classmethod
    def _pack(cls, entry: TimestampOffset, relative: int) -> bytes:
        return ENTRY.pack(entry.timestamp, relative)


@dataclass
class TimeIndexBuilder:
    """A segment's time index as its log is written, as Kafka's LogSegment keeps it: the largest
    timestamp so far and the offset holding it become an entry whenever the log adds an offset
    index entry, and once more when the segment rolls."""

    entries: list[TimestampOffset] = field(default_factory=list)
    max_timestamp: int = NO_TIMESTAMP
    offset_of_max_timestamp: int = -1

    def observe(self, max_timestamp: int, last_offset: int) -> None:
        """A batch appended: its max timestamp and last offset."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, last_offset

    def maybe_append(self) -> None:
        """TimeIndex.maybeAppend: only a strictly larger timestamp makes a new entry."""
        if self.max_timestamp == NO_TIMESTAMP:
            return
        if self.entries and self.max_timestamp <= self.entries[-1].timestamp:
            return
        self.entries.append(TimestampOffset(self.max_timestamp, self.offset_of_max_timestamp))


time_index_bytes = TimeIndex.entries_bytes
write_time_index = TimeIndex.write_file
