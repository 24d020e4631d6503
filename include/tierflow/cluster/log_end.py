"""A replica's log end offset, read from the tail of its last segment only.

``PartitionLog.log_end_offset`` reads every batch header of the active segment; comparing
replicas of thousands of partitions needs less. The last entry of the segment's offset index
(Kafka adds one every ``index.interval.bytes``) points at a batch near the end, so only the
batches after it are read. The active segment's index is preallocated and zero-filled past its
last entry; the last entry is found by a binary search over 8-byte reads.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

from tierflow.kafka.errors import CorruptRecordError, TruncatedDataError
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.naming import INDEX_SUFFIX, LOG_SUFFIX, offset_prefix
from tierflow.kafka.record_batch import iter_batches_in_buffer

_ENTRY = struct.Struct(">ii")  # relative offset, position
_PREFIX = struct.Struct(">qi")  # every batch (and legacy message): base offset, length
_MIN_BATCH_BODY = 14  # a v0 message's smallest body: crc, magic, attributes, key, value
_SEGMENT_NAME_LENGTH = 20 + len(LOG_SUFFIX)


def log_end_offset(log: PartitionLog) -> int:
    """The next offset the replica would write: after its last complete batch.

    A torn or corrupt tail ends the log where Kafka's recovery would truncate it.
    """
    base = last_segment_base(log.path)
    if base is None:
        return log.log_start_offset()
    log_path = log.path / f"{offset_prefix(base)}{LOG_SUFFIX}"
    size = log_path.stat().st_size
    start = _last_indexed_position(log.path / f"{offset_prefix(base)}{INDEX_SUFFIX}", size)
    last = _last_offset(log_path, start)
    if last is None and start > 0:  # an index that does not match its log: read it all
        last = _last_offset(log_path, 0)
    return base if last is None else last + 1


def last_segment_base(path: Path) -> int | None:
    """Base offset of the newest segment, from the file names alone."""
    bases = [
        int(entry.name[:20])
        for entry in os.scandir(path)
        if len(entry.name) == _SEGMENT_NAME_LENGTH
        and entry.name.endswith(LOG_SUFFIX)
        and entry.name[:20].isdigit()
    ]
    return max(bases, default=None)


def _last_offset(log_path: Path, start: int) -> int | None:
    """Last offset of the last complete batch at or after ``start``.

    Batches are walked by their 12-byte prefix (base offset, length) alone; only the last
    one's header is read in full.
    """
    last_position = None
    with open(log_path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        position = start
        while position + _PREFIX.size <= size:
            f.seek(position)
            _base, length = _PREFIX.unpack(f.read(_PREFIX.size))
            end = position + _PREFIX.size + length
            if length < _MIN_BATCH_BODY or end > size:
                break  # a zero-filled or torn tail: the log ends before it
            last_position, position = position, end
        if last_position is None:
            return None
        f.seek(last_position)
        batch = f.read(position - last_position)
    try:
        header = next(iter_batches_in_buffer(batch, source=str(log_path), validate_crc=False))
    except (StopIteration, TruncatedDataError, CorruptRecordError):
        return None
    return header.last_offset


def _last_indexed_position(index_path: Path, log_size: int) -> int:
    """Position of the last offset-index entry (0 when there is none or it is unusable).

    Kafka adds an entry only after ``index.interval.bytes`` of log, so a real entry never has
    position 0: an all-zero slot is the unused, preallocated tail.
    """
    try:
        with open(index_path, "rb") as f:
            count = os.fstat(f.fileno()).st_size // _ENTRY.size
            low, high = 0, count  # slots below low are used; slots at or above high are not
            while low < high:
                middle = (low + high) // 2
                f.seek(middle * _ENTRY.size)
                _relative, position = _ENTRY.unpack(f.read(_ENTRY.size))
                if position > 0:
                    low = middle + 1
                else:
                    high = middle
            if low == 0:
                return 0
            f.seek((low - 1) * _ENTRY.size)
            _relative, position = _ENTRY.unpack(f.read(_ENTRY.size))
    except OSError:
        return 0
    return position if 0 < position < log_size else 0
