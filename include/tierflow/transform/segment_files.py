"""A rolled segment's files on disk as the stream an upload reads.

Both storage managers upload from a ``LogSegmentStream``, whether the segment was rolled by a
broker or is being built by a diskless merge, so there is one upload path. The offset and time
indexes go up as their valid entries only: a zero-filled preallocated tail (a broker killed
before trimming) is not data. A compacted segment's slice (``LogSegmentData.slice_from``) goes
up as its tail: the ``.log`` from the slice's first batch, the indexes rebased.

The files are read one after the other, so a file replaced in between (the log cleaner swaps
in a cleaned segment under the same names) would pair a ``.log`` with another generation's
indexes. The upload fails instead: each file must be the same file, of the same size and
modification time, after the last byte was read as before the first.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.segment import LogSegment
from tierflow.kafka.segment_slice import slice_segment
from tierflow.kafka.time_index import TimeIndex
from tierflow.rsm import LogSegmentData, LogSegmentStream, SegmentFiles
from tierflow.transform.chunking import read_chunks

Fingerprint = tuple[tuple[int, int, int], ...]


class SegmentReplacedError(OSError):
    """The segment's files changed while they were read: the copy must start again."""


def read_segment_files(data: LogSegmentData) -> SegmentFiles:
    """The files beside the ``.log``, read when the upload gets to them."""
    txn = data.transaction_index
    return SegmentFiles(
        offset_index=OffsetIndex.valid_file_bytes(data.offset_index)[0],
        time_index=TimeIndex.valid_file_bytes(data.time_index)[0],
        transaction_index=None if txn is None else Path(txn).read_bytes(),
        producer_snapshot_index=Path(data.producer_snapshot_index).read_bytes(),
        leader_epoch_index=data.leader_epoch_index,
    )


def segment_file_stream(data: LogSegmentData, read_size: int) -> LogSegmentStream:
    """The ``.log`` in reads of ``read_size`` bytes (shown to ``data.observer`` on the way),
    then the other files; refused at the end if any of them was replaced meanwhile."""
    before = fingerprint(data)
    if data.slice_from is None:
        start, files = 0, read_segment_files
    else:
        cut = slice_segment(LogSegment.from_log_path(data.log_segment), data.slice_from)
        start = cut.position
        files = _slice_files(cut.offset_index, cut.time_index, cut.txn_index)
    chunks: Iterable[bytes] = read_chunks(data.log_segment, read_size, start=start)
    if data.observer is not None:
        chunks = data.observer.watch(chunks, start)

    def checked() -> SegmentFiles:
        found = files(data)
        if fingerprint(data) != before:
            raise SegmentReplacedError(
                f"{data.log_segment}: the segment's files were replaced while they were read "
                "(the log cleaner swapped in a cleaned segment); copy it again"
            )
        return found

    return LogSegmentStream(log_chunks=chunks, files=checked)


def _slice_files(
    offset_index: bytes, time_index: bytes, txn_index: bytes
) -> Callable[[LogSegmentData], SegmentFiles]:
    """The slice's files: its rebased indexes (made from the same reads), the segment's own
    producer snapshot and leader-epoch entries; no transaction index when none is open."""

    def files(data: LogSegmentData) -> SegmentFiles:
        return SegmentFiles(
            offset_index=offset_index,
            time_index=time_index,
            transaction_index=txn_index or None,
            producer_snapshot_index=Path(data.producer_snapshot_index).read_bytes(),
            leader_epoch_index=data.leader_epoch_index,
        )

    return files


def fingerprint(data: LogSegmentData) -> Fingerprint:
    """Inode, size and modification time of each file the cleaner may replace."""
    paths = [data.log_segment, data.offset_index, data.time_index, data.transaction_index]
    return tuple(_stat(Path(p)) for p in paths if p is not None)


def _stat(path: Path) -> tuple[int, int, int]:
    found = os.stat(path)
    return found.st_ino, found.st_size, found.st_mtime_ns
