"""Checking a ``.log``'s batches from the pieces an upload reads, so the bytes are read once.

The upload streams a segment in chunks of a few MiB; batches straddle them. ``BatchScan`` is fed
each chunk, checks every batch that is complete (framing, magic, CRC) with its position in the
file, and carries the rest into the next chunk. At the end, bytes left over are what
``iter_batches`` would call truncated, with the same words and position; a zero length ends the
data, as a preallocated tail does.
"""

from __future__ import annotations

import struct

from tierflow.kafka.record_batch import LOG_OVERHEAD, BatchHeader, iter_batches_read_by

_LENGTH = struct.Struct(">i")


class BatchScan:
    """Batches of one ``.log`` from byte ``start`` on, fed in order."""

    def __init__(self, source: str, start: int = 0) -> None:
        self.source = source
        self._pending = b""
        self._position = start  # the file position of _pending's first byte
        self._ended = False  # a zero length was seen: the rest is a preallocated tail

    def feed(self, chunk: bytes) -> list[BatchHeader]:
        """The batches completed by ``chunk``, each checked."""
        if self._ended:
            return []
        data = self._pending + chunk if self._pending else chunk
        complete, self._ended = _complete(data)
        headers = self._walk(data, complete)
        self._pending = b"" if self._ended else data[complete:]
        self._position += complete
        return headers

    def finish(self) -> list[BatchHeader]:
        """The last batches; raises when the data ends inside one (TruncatedDataError)."""
        if self._ended or not self._pending:
            return []
        data, self._pending = self._pending, b""
        return self._walk(data, len(data))

    def _walk(self, data: bytes, end: int) -> list[BatchHeader]:
        base = self._position
        view = memoryview(data)

        def read(position: int, length: int) -> bytes:
            return bytes(view[position - base : min(position - base + length, end)])

        return list(iter_batches_read_by(read, base + end, source=self.source, start=base))


def _complete(data: bytes) -> tuple[int, bool]:
    """How many leading bytes of ``data`` are whole batches, and whether a zero length (the end
    of the data) follows them. A length no batch can have is left for the walk to refuse."""
    at = 0
    while at + LOG_OVERHEAD <= len(data):
        (length,) = _LENGTH.unpack_from(data, at + 8)
        if length == 0:
            return at, True
        if length < 0:
            return len(data), False  # the walk names the impossible length at ``at``
        if at + LOG_OVERHEAD + length > len(data):
            break
        at += LOG_OVERHEAD + length
    return at, False
