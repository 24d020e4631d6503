"""A rolled segment's files on disk as the stream an upload reads.

Both storage managers upload from a ``LogSegmentStream``, whether the segment was rolled by a
broker or is being built by a diskless merge, so there is one upload path. The offset and time
indexes go up as their valid entries only: a zero-filled preallocated tail (a broker killed
before trimming) is not data.
"""

from __future__ import annotations

from pathlib import Path

from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.time_index import TimeIndex
from tierflow.rsm import LogSegmentData, LogSegmentStream, SegmentFiles
from tierflow.transform.chunking import read_chunks


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
    """The ``.log`` in reads of ``read_size`` bytes, then the other files."""
    return LogSegmentStream(
        log_chunks=read_chunks(data.log_segment, read_size),
        files=lambda: read_segment_files(data),
    )
