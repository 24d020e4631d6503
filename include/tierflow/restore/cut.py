"""A restore up to an offset ends at the batch that holds it, as a broker's log would end there.

The cut is found in remote storage before anything is written: the remote offset index gives
the position of the closest indexed batch, and ranged reads from there find the batch holding
the offset. The last segment is then written up to the end of that batch only, its indexes
keep the entries below the cut, and its producer snapshot is left out: at load, the broker
rebuilds producer state from the previous segment's snapshot and the kept batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tierflow.kafka.errors import TruncatedDataError
from tierflow.kafka.offset_index import OffsetIndex, offset_index_bytes
from tierflow.kafka.record_batch import iter_batches_in_buffer
from tierflow.kafka.time_index import TimeIndex, time_index_bytes
from tierflow.kafka.txn_index import txn_index_bytes, txn_index_entries
from tierflow.restore.errors import RestoreError
from tierflow.rsm import IndexType, RemoteSegment, RemoteStorageManager

WINDOW = 1 << 20  # the first ranged read after the indexed position; doubled while too short


@dataclass(frozen=True)
class Cut:
    """The last kept batch's last offset, and the bytes of the segment kept (up to its end)."""

    last_offset: int
    size_in_bytes: int


def find_cut(rsm: RemoteStorageManager, segment: RemoteSegment, size: int, to_offset: int) -> Cut:
    """Where the batch holding ``to_offset`` ends, from the remote offset index and ranged
    reads of the ``.log`` (no more than that batch's neighbourhood is read)."""
    data = rsm.fetch_index(segment, IndexType.OFFSET)
    index = OffsetIndex.from_bytes(data, segment.start_offset, source=_source(segment, "offset"))
    start = index.lookup(to_offset).position
    window = WINDOW
    while True:
        end = min(size, start + window)
        data = rsm.fetch_log_segment(segment, start, end - 1)
        cut = _holding(data, start, to_offset, segment, whole=end >= size)
        if cut is not None:
            return cut
        window *= 2


def _holding(
    data: bytes, start: int, to_offset: int, segment: RemoteSegment, *, whole: bool
) -> Cut | None:
    """The cut, if a batch of ``data`` (read from ``start``) holds the offset; None when the
    read ended first and more of the segment is left to read."""
    try:
        for batch in iter_batches_in_buffer(data, source=segment.describe(), validate_crc=False):
            if batch.last_offset >= to_offset:
                return Cut(batch.last_offset, start + batch.position + batch.size_in_bytes)
    except TruncatedDataError:
        if whole:
            raise
        return None
    if whole:
        raise RestoreError(f"{segment.describe()}: no batch holds offset {to_offset}")
    return None


def cut_offset_index(data: bytes, segment: RemoteSegment, cut: Cut) -> bytes:
    """The offset index of the segment ending at the cut: the entries below it."""
    index = OffsetIndex.from_bytes(data, segment.start_offset, source=_source(segment, "offset"))
    kept = [
        e for e in index.entries if e.offset <= cut.last_offset and e.position < cut.size_in_bytes
    ]
    return offset_index_bytes(segment.start_offset, kept)


def cut_time_index(data: bytes, segment: RemoteSegment, cut: Cut) -> bytes:
    index = TimeIndex.from_bytes(data, segment.start_offset, source=_source(segment, "time"))
    kept = [e for e in index.entries if e.offset <= cut.last_offset]
    return time_index_bytes(segment.start_offset, kept)


def cut_txn_index(data: bytes, segment: RemoteSegment, cut: Cut) -> bytes:
    """A transaction aborted after the cut is not aborted in the cut log."""
    entries = txn_index_entries(data, _source(segment, "transaction"))
    return txn_index_bytes(e for e in entries if e.last_offset <= cut.last_offset)


def cut_log(chunks: Iterable[bytes], cut: Cut) -> Iterator[bytes]:
    """The ``.log``'s chunks up to the cut only."""
    left = cut.size_in_bytes
    for chunk in chunks:
        if left <= 0:
            return
        yield chunk[:left]
        left -= len(chunk)


def _source(segment: RemoteSegment, kind: str) -> str:
    return f"{segment.describe()} {kind} index"
