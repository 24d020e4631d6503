"""Checking a ``.log``'s batches from the pieces an upload reads, so the bytes are read once.

The upload streams a segment in chunks of a few MiB; batches straddle them. ``BatchScan`` is fed
each chunk and checks every batch that is complete (framing, magic, codec, CRC), in place, with
its position in the file; only the batch that straddles two chunks is copied. A v2 batch whose
header and CRC are sound costs one unpack and one CRC32C; anything else (a legacy message, or
any fault) is read by record_batch's walk, which names the fault exactly as ``iter_batches``
does. At the end, bytes left over are what ``iter_batches`` calls truncated, in the same words;
a zero length ends the data, as a preallocated tail does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from crc32c import crc32c

from tierflow.kafka.records import CODEC_MASK, LENGTH_OFFSET, LOG_OVERHEAD

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp: the v2 header's first 43 bytes.
_V2 = struct.Struct(">qiibIhiqq")
_V2_HEADER_SIZE = 61
_CRC_FROM = 21  # the CRC covers the batch from its attributes on
_V2_CODECS = range(5)
_LENGTH = struct.Struct(">i")


class BatchFacts(NamedTuple):
    """What a copy keeps of each batch."""

    base_offset: int
    last_offset: int
    leader_epoch: int
    max_timestamp: int


@dataclass(frozen=True)
class ScannedFacts:
    """What a copy learned from a segment's batches as it uploaded them, recorded with
    COPY_SEGMENT_FINISHED: the largest timestamp, and the leader epochs as (epoch, start
    offset) pairs (None: the batches carry none, the STARTED row's checkpoint epochs stand),
    and the CRC-32C of every byte read (what a repair compares a local segment with)."""

    max_timestamp_ms: int
    leader_epochs: list[tuple[int, int]] | None
    log_crc32c: int | None = None

    @classmethod
    def from_dict(cls, raw: dict) -> ScannedFacts:
        """Back from JSON (a job result, ``dataclasses.asdict``)."""
        epochs = raw.get("leader_epochs")
        pairs = None if epochs is None else [(int(e), int(o)) for e, o in epochs]
        crc = raw.get("log_crc32c")
        return cls(int(raw["max_timestamp_ms"]), pairs, None if crc is None else int(crc))


class BatchScan:
    """Batches of one ``.log`` from byte ``start`` on, fed in order."""

    def __init__(self, source: str, start: int = 0, end: int | None = None) -> None:
        self.source = source
        self._end = end  # the file's size, when known: a batch claiming more is cut short
        self._pending = bytearray()  # the start of a batch the next chunk completes
        self._position = start  # the file position of the next byte not yet checked
        self._ended = False  # a zero length was seen: the rest is a preallocated tail

    def feed(self, chunk: bytes) -> list[BatchFacts]:
        """The batches completed by ``chunk``, each checked."""
        found: list[BatchFacts] = []
        if self._ended:
            return found
        view = memoryview(chunk)
        at = self._complete_pending(view, found) if self._pending else 0
        if at is None or self._ended:
            return found
        end, self._ended = _complete(view, at)
        self._check(view, at, end, found)
        if not self._ended:
            self._pending = bytearray(view[end:])
        return found

    def finish(self) -> list[BatchFacts]:
        """The last batches; raises when the data ends inside one (TruncatedDataError)."""
        found: list[BatchFacts] = []
        if not self._ended and self._pending:
            view, self._pending = memoryview(bytes(self._pending)), bytearray()
            self._check(view, 0, len(view), found)
        return found

    def _complete_pending(self, view: memoryview, found: list[BatchFacts]) -> int | None:
        """Complete the batch that straddles into ``view`` and check it: how far into ``view``
        it reached (None: ``view`` ends inside it, or inside its prefix)."""
        pending = self._pending
        at = min(max(0, LOG_OVERHEAD - len(pending)), len(view))
        pending += view[:at]
        if len(pending) < LOG_OVERHEAD:
            return None
        (length,) = _LENGTH.unpack_from(pending, LENGTH_OFFSET)
        if length == 0:
            self._ended, self._pending = True, bytearray()
            return at
        size = LOG_OVERHEAD + length
        if length < 0 or (self._end is not None and self._position + size > self._end):
            whole = memoryview(bytes(pending))  # the walk names the fault, as iter_batches
            self._walked(whole, 0, len(whole), self._position, self._end)
        need = max(0, size - len(pending))
        if need > len(view) - at:
            pending += view[at:]
            return None
        pending += view[at : at + need]
        self._pending = bytearray()
        self._check(memoryview(bytes(pending)), 0, len(pending), found)
        return at + need

    def _check(self, view: memoryview, at: int, end: int, found: list[BatchFacts]) -> None:
        """Every batch of ``view[at:end]``; ``self._position`` is the file position of ``at``."""
        base = self._position - at
        while at < end:
            facts, size = _v2_batch(view, at, end)
            if facts is None:
                walked = self._walked(view, at, end, base)
                if walked is None:  # the last few bytes are a zero-filled tail
                    break
                facts, size = walked
            found.append(facts)
            at += size
        self._position = base + end

    def _walked(
        self, view: memoryview, at: int, end: int, base: int, walk_end: int | None = None
    ) -> tuple[BatchFacts, int] | None:
        """One batch by record_batch's walk: a legacy message, or the exact fault (a batch
        longer than the file is measured against ``walk_end``, the file's end)."""

        def read(position: int, length: int) -> bytes:
            return bytes(view[position - base : min(position - base + length, end)])

        from tierflow.kafka.record_batch import iter_batches_read_by  # kafka-python: rare here

        stop = base + end if walk_end is None else walk_end
        walk = iter_batches_read_by(read, stop, source=self.source, start=base + at)
        header = next(walk, None)
        if header is None:
            return None
        facts = BatchFacts(
            header.base_offset,
            header.last_offset,
            header.partition_leader_epoch,
            header.max_timestamp,
        )
        return facts, header.size_in_bytes


def _v2_batch(view: memoryview, at: int, end: int) -> tuple[BatchFacts | None, int]:
    """A sound v2 batch at ``at`` and its size; None for anything else."""
    if end - at < _V2_HEADER_SIZE:
        return None, 0
    base_offset, length, epoch, magic, crc, attributes, last_delta, _, max_ts = _V2.unpack_from(
        view, at
    )
    size = LOG_OVERHEAD + length
    if magic != 2 or size < _V2_HEADER_SIZE or at + size > end:
        return None, 0
    if attributes & CODEC_MASK not in _V2_CODECS:
        return None, 0
    if crc32c(view[at + _CRC_FROM : at + size]) != crc:
        return None, 0
    return BatchFacts(base_offset, base_offset + last_delta, epoch, max_ts), size


def sound_v2_codec(data: bytes) -> int | None:
    """The codec of the sound v2 batch ``data`` starts with (its header, magic, codec and CRC
    checked, in place); None for anything else: a legacy message, or a fault for record_batch's
    walk to name."""
    view = memoryview(data)
    facts, _ = _v2_batch(view, 0, len(view))
    if facts is None:
        return None
    return _V2.unpack_from(view, 0)[5] & CODEC_MASK


def _complete(view: memoryview, at: int) -> tuple[int, bool]:
    """Where the whole batches of ``view`` from ``at`` end, and whether a zero length (the end
    of the data) follows them. A length no batch can have is left for the walk to refuse."""
    while at + LOG_OVERHEAD <= len(view):
        (length,) = _LENGTH.unpack_from(view, at + LENGTH_OFFSET)
        if length == 0:
            return at, True
        if length < 0:
            return len(view), False  # the walk names the impossible length at ``at``
        if at + LOG_OVERHEAD + length > len(view):
            break
        at += LOG_OVERHEAD + length
    return at, False
