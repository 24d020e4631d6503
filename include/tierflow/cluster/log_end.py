"""A replica's log end offset as a broker's recovery would leave it: a torn tail ends the log.

``PartitionLog.log_end_offset`` refuses a damaged tail, naming it; comparing replicas of
thousands of partitions (some of them crashed mid-write) needs the offset Kafka's recovery
would truncate to instead. Both start at the last entry of the active segment's offset index
(``OffsetIndex.last_entry``), so only the batches after it are read.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import BinaryIO

from tierflow.kafka.errors import CorruptRecordError, TruncatedDataError
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.naming import INDEX_SUFFIX, LOG_SUFFIX, offset_prefix
from tierflow.kafka.offset_index import OffsetIndex

_PREFIX = struct.Struct(">qi")  # every batch (and legacy message): base offset, length
_MIN_BATCH_BODY = 14  # a v0 message's smallest body: crc, magic, attributes, key, value
_BLOCK_BYTES = 64 * 1024  # the tail after the last index entry is ~index.interval.bytes
_SEGMENT_NAME_LENGTH = 20 + len(LOG_SUFFIX)


def log_end_offset(log: PartitionLog) -> int:
    """The next offset the replica would write: after its last complete batch.

    A torn or corrupt tail ends the log where Kafka's recovery would truncate it.
    """
    directory = str(log.path)
    base = last_segment_base(directory)
    if base is None:
        return log.log_start_offset()
    prefix = os.path.join(directory, offset_prefix(base))
    with open(prefix + LOG_SUFFIX, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        start = _last_indexed_position(prefix + INDEX_SUFFIX, size)
        last = _last_offset(f, size, start)
        if last is None and start > 0:  # an index that does not match its log: read it all
            last = _last_offset(f, size, 0)
    return base if last is None else last + 1


def last_segment_base(path: str | Path) -> int | None:
    """Base offset of the newest segment, from the file names alone."""
    bases = [
        int(entry.name[:20])
        for entry in os.scandir(path)
        if len(entry.name) == _SEGMENT_NAME_LENGTH
        and entry.name.endswith(LOG_SUFFIX)
        and entry.name[:20].isdigit()
    ]
    return max(bases, default=None)


def _last_offset(f: BinaryIO, size: int, start: int) -> int | None:
    """Last offset of the last complete batch at or after ``start``.

    Batches are walked by their 12-byte prefix (base offset, length) alone; only the last
    one is parsed (by tierflow.kafka.record_batch).
    """
    last_position, position = _walk_batches(f, start, size)
    if last_position is None:
        return None
    f.seek(last_position)
    batch = f.read(position - last_position)
    # Here, not at import: kafka-python's record classes load its whole client.
    from tierflow.kafka.record_batch import iter_batches_in_buffer

    try:
        header = next(iter_batches_in_buffer(batch, source=f.name, validate_crc=False))
    except (StopIteration, TruncatedDataError, CorruptRecordError):
        return None
    return header.last_offset


def _walk_batches(f: BinaryIO, start: int, size: int) -> tuple[int | None, int]:
    """(position of the last complete batch, where it ends), reading blocks, not batches."""
    last, position = None, start
    block, block_start = b"", start
    while position + _PREFIX.size <= size:
        if position + _PREFIX.size > block_start + len(block):
            f.seek(position)
            block, block_start = f.read(_BLOCK_BYTES), position
        _base, length = _PREFIX.unpack_from(block, position - block_start)
        end = position + _PREFIX.size + length
        if length < _MIN_BATCH_BODY or end > size:
            break  # a zero-filled or torn tail: the log ends before it
        last, position = position, end
    return last, position


def _last_indexed_position(index_path: str, log_size: int) -> int:
    """Position of the last offset-index entry (0 when there is none or it is unusable)."""
    try:
        entry = OffsetIndex.last_entry(index_path, 0)
    except OSError:
        return 0
    position = 0 if entry is None else entry.position
    return position if 0 < position < log_size else 0
