"""Whole record batches from a remote segment, read by byte ranges.

Kafka streams the segment from the index position; against an object store every request is
a round trip and every byte is paid for, so this reads a window, parses the offset+length
framing, and extends the window only when a batch crosses its end. Batches that a fetch skips
are stepped over using their 12-byte prefix and header, never returned half.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field

from tierflow.kafka.errors import CorruptRecordError, TruncatedDataError
from tierflow.kafka.record_batch import LOG_OVERHEAD, BatchHeader, iter_batches_in_buffer
from tierflow.read.remote_reads import RemoteReads
from tierflow.rsm import RemoteSegment

MIN_READ = 8 * 1024  # two of Kafka's index intervals: usually the skip and the first batch
MAX_READ_AHEAD = 8 * 1024 * 1024
_PREFIX = struct.Struct(">qi")
_MAGIC_AT = 16
_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23
_V2_PEEK = _LAST_OFFSET_DELTA_AT + _LAST_OFFSET_DELTA.size
_V2_HEADER_SIZE = 61
_LEGACY_MIN_SIZE = LOG_OVERHEAD + 14  # a v0 message with null key and value


@dataclass(frozen=True)
class PendingBatch:
    """The next batch, known from its prefix: enough to skip it or decide to read it."""

    position: int
    size: int
    base_offset: int
    last_offset: int


@dataclass(frozen=True)
class RemoteBatch:
    segment_id: str
    header: BatchHeader  # position: byte position in the segment's .log
    data: bytes


@dataclass(eq=False)
class SegmentBatchReader:
    """Batches of one segment from ``position`` on; ``read_ahead`` sizes the next reads."""

    reads: RemoteReads
    segment: RemoteSegment
    size: int  # the segment's size in bytes
    position: int
    min_read: int = field(default=MIN_READ, kw_only=True)

    def __post_init__(self) -> None:
        self.read_ahead = self.min_read
        self._buffer = b""
        self._buffer_start = self.position
        self._source = f"{self.segment.describe()} .log"

    def peek(self) -> PendingBatch | None:
        """The batch at the current position; None at the end of the segment's data."""
        head = self._read(self.position, _V2_PEEK, at_least=LOG_OVERHEAD)
        if len(head) < LOG_OVERHEAD:
            if not any(head):
                return None
            raise TruncatedDataError(
                self._source, self.position, f"{len(head)} bytes left, less than a batch prefix"
            )
        base_offset, length = _PREFIX.unpack_from(head)
        if length == 0:
            return None  # a zero-filled tail ends the data, as in Kafka's log reader
        size = LOG_OVERHEAD + length
        magic = head[_MAGIC_AT] if len(head) > _MAGIC_AT else -1
        if magic == 2 and size >= _V2_HEADER_SIZE and len(head) >= _V2_PEEK:
            (delta,) = _LAST_OFFSET_DELTA.unpack_from(head, _LAST_OFFSET_DELTA_AT)
            last_offset = base_offset + delta
        elif magic in (0, 1) and size >= _LEGACY_MIN_SIZE:
            last_offset = base_offset  # a legacy wrapper carries its last inner offset
        else:
            raise CorruptRecordError(
                self._source,
                self.position,
                f"batch at offset {base_offset}: impossible length {length} or magic {magic}",
            )
        return PendingBatch(self.position, size, base_offset, last_offset)

    def skip(self, pending: PendingBatch) -> None:
        self.position = pending.position + pending.size

    def take(self, pending: PendingBatch) -> RemoteBatch:
        """Read the whole batch and move past it."""
        data = self._read(pending.position, pending.size, at_least=pending.size)
        if len(data) < pending.size:
            raise TruncatedDataError(
                self._source,
                pending.position,
                f"batch at offset {pending.base_offset} needs {pending.size} bytes but the "
                f"segment ends after {len(data)}",
            )
        header = next(iter_batches_in_buffer(data, source=self._source, validate_crc=False))
        self.position = pending.position + pending.size
        return RemoteBatch(
            self.segment.segment_id, dataclasses.replace(header, position=pending.position), data
        )

    def next_batch(self) -> RemoteBatch | None:
        pending = self.peek()
        return None if pending is None else self.take(pending)

    def _read(self, start: int, length: int, *, at_least: int) -> bytes:
        """Bytes [start, start+length), fewer only at the end of the segment.

        When the buffer lacks them, one ranged read fetches at least ``at_least`` bytes
        from ``start`` plus the read-ahead, so the batches that follow usually come with it.
        """
        end = min(start + length, self.size)
        buffer_end = self._buffer_start + len(self._buffer)
        if self._buffer_start <= start and end <= buffer_end:
            offset = start - self._buffer_start
            return self._buffer[offset : offset + (end - start)]
        if not self._buffer_start <= start <= buffer_end:
            self._buffer, self._buffer_start = b"", start
            buffer_end = start
        ahead = min(max(self.min_read, self.read_ahead), MAX_READ_AHEAD)
        fetch_end = min(max(start + at_least, start + ahead, end), self.size)
        if fetch_end > buffer_end:
            more = self.reads.fetch_log(self.segment, buffer_end, fetch_end - 1)
            # Keep only what is ahead of ``start``: memory stays at about one window.
            keep_from = start - self._buffer_start
            self._buffer = self._buffer[keep_from:] + more
            self._buffer_start = start
        offset = start - self._buffer_start
        return self._buffer[offset : offset + (end - start)]
