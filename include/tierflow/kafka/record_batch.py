"""Record batches in a ``.log`` segment (or any message set), read one batch at a time.

kafka-python parses the batch headers and checks CRCs, but its ``MemoryRecords`` needs the whole
file in memory, raises on a zero-filled preallocated tail and silently drops a truncated last
batch. So the framing (int64 offset + int32 length prefix) is done here: the file is streamed
one batch at a time, a zero length ends the data, and a cut-short batch is reported with its
byte position.
"""

from __future__ import annotations

import importlib.util
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kafka.errors import UnsupportedCodecError
from kafka.record.abc import ABCRecord
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import calc_crc32, calc_crc32c

from tierflow.kafka.errors import CorruptRecordError, TruncatedDataError
from tierflow.kafka.records import LOG_OVERHEAD

_MAGIC_OFFSET = MemoryRecords.MAGIC_OFFSET
_PREFIX = struct.Struct(">qi")
_V2_HEADER_SIZE = DefaultRecordBatch.HEADER_STRUCT.size
_LEGACY_HEADER = {0: LegacyRecordBatch.HEADER_STRUCT_V0, 1: LegacyRecordBatch.HEADER_STRUCT_V1}
# Smallest possible batch per magic, prefix included (a v0/v1 message with null key and value).
_MIN_BATCH_SIZE = {
    0: LOG_OVERHEAD + LegacyRecordBatch.RECORD_OVERHEAD_V0,
    1: LOG_OVERHEAD + LegacyRecordBatch.RECORD_OVERHEAD_V1,
    2: _V2_HEADER_SIZE,
}
_SMALLEST = min(_MIN_BATCH_SIZE.values())
_LEGACY_CODECS = range(4)  # none, gzip, snappy, lz4
_V2_CODECS = range(5)  # and zstd

_HAS_XXHASH = importlib.util.find_spec("xxhash") is not None

Reader = Callable[[int, int], bytes]


@dataclass(frozen=True)
class BatchHeader:
    """The header of one batch (v2) or one outer message (v0/v1), as Kafka's RecordBatch sees it."""

    position: int
    size_in_bytes: int
    base_offset: int
    last_offset: int
    magic: int
    crc: int
    partition_leader_epoch: int
    compression_type: int
    timestamp_type: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    is_control_batch: bool
    records_count: int | None

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def end_position(self) -> int:
        """Byte position just after this batch, i.e. where the next one starts."""
        return self.position + self.size_in_bytes


@dataclass(frozen=True)
class _Frame:
    position: int
    size: int
    magic: int
    data: bytes  # the whole batch, or only its header when that is all that is needed

    @property
    def complete(self) -> bool:
        return len(self.data) == self.size


def _frames(read: Reader, end: int, source: str, start: int, *, need_all: bool) -> Iterator[_Frame]:
    """Walk the offset+length framing from ``start`` to ``end``, checking lengths and magic."""
    if start < 0:
        raise ValueError(f"start_position must not be negative: {start}")
    pos = start
    while pos < end:
        head = read(pos, min(_MAGIC_OFFSET + 1, end - pos))
        if len(head) < LOG_OVERHEAD:
            if not any(head):
                return  # the last few bytes of a zero-filled tail
            raise TruncatedDataError(
                source, pos, f"only {len(head)} bytes left, less than a 12-byte batch prefix"
            )
        base_offset, length = _PREFIX.unpack_from(head)
        if length == 0:
            return  # zero-filled tail of a preallocated (or crashed) segment: end of data
        size = LOG_OVERHEAD + length
        if size < _SMALLEST:
            raise CorruptRecordError(
                source, pos, f"impossible batch length {length} (batch at offset {base_offset})"
            )
        if pos + size > end:
            raise TruncatedDataError(
                source,
                pos,
                f"batch at offset {base_offset} needs {size} bytes but only {end - pos} remain",
            )
        magic = struct.unpack_from(">b", head, _MAGIC_OFFSET)[0]
        if magic not in _MIN_BATCH_SIZE:
            raise CorruptRecordError(
                source, pos, f"unknown magic byte {magic} (batch at offset {base_offset})"
            )
        if size < _MIN_BATCH_SIZE[magic]:
            raise CorruptRecordError(
                source, pos, f"impossible length {length} for a magic {magic} batch"
            )
        if need_all or (magic < 2 and _legacy_compressed(read, pos)):
            data = read(pos, size)
        elif magic == 2:
            data = read(pos, _V2_HEADER_SIZE)
        else:
            data = read(pos, _LEGACY_HEADER[magic].size)
        yield _Frame(pos, size, magic, bytes(data))
        pos += size


def _legacy_compressed(read: Reader, pos: int) -> bool:
    attributes = read(pos + _MAGIC_OFFSET + 1, 1)[0]
    return bool(attributes & LegacyRecordBatch.CODEC_MASK)


def _crc_error(frame: _Frame, source: str, base_offset: int, stored: int) -> CorruptRecordError:
    if frame.magic == 2:
        computed = calc_crc32c(memoryview(frame.data)[DefaultRecordBatch.ATTRIBUTES_OFFSET :])
    else:
        computed = calc_crc32(memoryview(frame.data)[_MAGIC_OFFSET:])
    return CorruptRecordError(
        source,
        frame.position,
        f"crc mismatch in batch at offset {base_offset}: "
        f"stored {stored:#010x}, computed {computed:#010x}",
    )


def _v2_header(frame: _Frame, source: str, validate_crc: bool) -> BatchHeader:
    batch = DefaultRecordBatch(frame.data)
    if validate_crc and not batch.validate_crc():
        raise _crc_error(frame, source, batch.base_offset, batch.crc)
    _check_codec(frame, source, batch.compression_type, batch.base_offset)
    return BatchHeader(
        position=frame.position,
        size_in_bytes=frame.size,
        base_offset=batch.base_offset,
        last_offset=batch.last_offset,
        magic=2,
        crc=batch.crc,
        partition_leader_epoch=batch.leader_epoch,
        compression_type=batch.compression_type,
        timestamp_type=batch.timestamp_type,
        max_timestamp=batch.max_timestamp,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        is_control_batch=batch.is_control_batch,
        records_count=batch.records_count,
    )


def _legacy_header(frame: _Frame, source: str, validate_crc: bool) -> BatchHeader:
    fields = _LEGACY_HEADER[frame.magic].unpack_from(frame.data)
    offset, _length, crc, _magic, attributes = fields[:5]
    # Kafka's maxTimestamp of a legacy batch is the outer message's timestamp (none in v0).
    timestamp = fields[5] if frame.magic == 1 else -1
    compression = attributes & LegacyRecordBatch.CODEC_MASK
    base_offset = offset
    batch = LegacyRecordBatch(frame.data, frame.magic) if frame.complete else None
    # Must come before iteration: iterating swaps in the decompressed buffer, after which
    # kafka-python's validate_crc() answers for the wrong bytes.
    if batch is not None and validate_crc and not batch.validate_crc():
        raise _crc_error(frame, source, offset, crc)
    _check_codec(frame, source, compression, offset)
    if batch is not None and compression:
        base_offset = _first_inner_offset(batch, frame, source)
    return BatchHeader(
        position=frame.position,
        size_in_bytes=frame.size,
        base_offset=base_offset,
        last_offset=offset,  # a wrapper carries the offset of its last inner message
        magic=frame.magic,
        crc=crc,
        partition_leader_epoch=-1,
        compression_type=compression,
        timestamp_type=(attributes & LegacyRecordBatch.TIMESTAMP_TYPE_MASK) >> 3,
        max_timestamp=timestamp,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        is_transactional=False,
        is_control_batch=False,
        records_count=None if compression else 1,  # as Kafka's countOrNull()
    )


def _check_codec(frame: _Frame, source: str, compression: int, offset: int) -> None:
    """Kafka's CompressionType.forId refuses ids 5-7, and zstd before magic 2.

    Checked after the CRC, so a damaged byte is reported as such. kafka-python would report
    the id as a header field and later raise UnsupportedCodecError, which reads as a missing
    library rather than a corrupt batch.
    """
    if compression not in (_V2_CODECS if frame.magic == 2 else _LEGACY_CODECS):
        raise CorruptRecordError(
            source,
            frame.position,
            f"unknown compression codec id {compression} for a magic {frame.magic} batch "
            f"(batch at offset {offset})",
        )


def _require_codec(magic: int, compression: int) -> None:
    """kafka-python raises a bare RuntimeError here; a missing library is not corrupt data."""
    if magic == 0 and compression == LegacyRecordBatch.CODEC_LZ4 and not _HAS_XXHASH:
        raise UnsupportedCodecError("magic 0 LZ4 (Kafka 0.8/0.9 framing) needs the xxhash package")


def _first_inner_offset(batch: LegacyRecordBatch, frame: _Frame, source: str) -> int:
    """Kafka's baseOffset of a compressed wrapper: the first inner message's absolute offset."""
    _require_codec(frame.magic, batch.compression_type)
    try:
        first = next(iter(batch), None)
    except UnsupportedCodecError:
        raise
    except Exception as exc:  # decompressors raise many unrelated types on bad input
        raise CorruptRecordError(
            source, frame.position, f"cannot read compressed wrapper: {exc!r}"
        ) from exc
    if first is None:
        raise CorruptRecordError(source, frame.position, "compressed wrapper holds no messages")
    return first.offset


def _header(frame: _Frame, source: str, validate_crc: bool) -> BatchHeader:
    if frame.magic == 2:
        return _v2_header(frame, source, validate_crc)
    return _legacy_header(frame, source, validate_crc)


def _file_reader(f: BinaryIO) -> Reader:
    def read(position: int, length: int) -> bytes:
        f.seek(position)
        return f.read(length)

    return read


def _end(size: int, end_position: int | None) -> int:
    return size if end_position is None else min(size, end_position)


def iter_batches(
    path: str | Path,
    *,
    validate_crc: bool = True,
    start_position: int = 0,
    end_position: int | None = None,
) -> Iterator[BatchHeader]:
    """Headers of the batches in a log file, streamed so memory stays at about one batch.

    Without ``validate_crc`` only headers are read (except for legacy compressed wrappers, whose
    base offset is inside the compressed payload).
    """
    with open(path, "rb") as f:
        end = _end(os.fstat(f.fileno()).st_size, end_position)
        yield from iter_batches_read_by(
            _file_reader(f), end, source=str(path), start=start_position, validate_crc=validate_crc
        )


def iter_batches_read_by(
    read: Reader, end: int, *, source: str, start: int, validate_crc: bool = True
) -> Iterator[BatchHeader]:
    """Like :func:`iter_batches` over any ``read(position, length)`` up to ``end``: a reader
    of bytes that arrive in pieces (batch_scan.py) keeps the file's positions in errors."""
    for frame in _frames(read, end, source, start, need_all=validate_crc):
        yield _header(frame, source, validate_crc)


def iter_batches_in_buffer(
    buf: bytes | bytearray | memoryview,
    *,
    source: str,
    validate_crc: bool = True,
    start_position: int = 0,
    end_position: int | None = None,
) -> Iterator[BatchHeader]:
    """Like :func:`iter_batches` over bytes already in memory; ``source`` names them in errors."""
    view = memoryview(buf)

    def read(position: int, length: int) -> bytes:
        return bytes(view[position : position + length])

    end = _end(len(view), end_position)
    yield from iter_batches_read_by(
        read, end, source=source, start=start_position, validate_crc=validate_crc
    )


def iter_records(
    path: str | Path, *, start_position: int = 0, end_position: int | None = None
) -> Iterator[ABCRecord]:
    """kafka-python record objects (decompressed), each batch CRC-checked before it is opened."""
    for _header, records in iter_batch_records(
        path, start_position=start_position, end_position=end_position
    ):
        yield from records


def iter_batch_records(
    path: str | Path, *, start_position: int = 0, end_position: int | None = None
) -> Iterator[tuple[BatchHeader, list[ABCRecord]]]:
    """Each batch's header with its records, for readers that need the control flag or position."""
    source = str(path)
    with open(path, "rb") as f:
        end = _end(os.fstat(f.fileno()).st_size, end_position)
        for frame in _frames(_file_reader(f), end, source, start_position, need_all=True):
            header = _header(frame, source, validate_crc=True)
            batch: DefaultRecordBatch | LegacyRecordBatch
            if frame.magic == 2:
                batch = DefaultRecordBatch(frame.data)
            else:
                batch = LegacyRecordBatch(frame.data, frame.magic)
                _require_codec(frame.magic, header.compression_type)
            try:
                records = list(batch)
            except UnsupportedCodecError:
                raise
            except Exception as exc:
                raise CorruptRecordError(
                    source,
                    frame.position,
                    f"cannot read records of batch at offset {header.base_offset}: {exc!r}",
                ) from exc
            yield header, records


def valid_bytes(path: str | Path, *, validate_crc: bool = True) -> int:
    """Bytes up to the end of the last good batch: where Kafka's recovery would truncate.

    Stops at a zero-filled tail, a truncated batch or (as Kafka's LogSegment.recover does) the
    first corrupt batch.
    """
    valid = 0
    try:
        for header in iter_batches(path, validate_crc=validate_crc):
            valid = header.end_position
    except (TruncatedDataError, CorruptRecordError):
        pass
    return valid


def iter_batch_frames(chunks: Iterable[bytes], *, source: str) -> Iterator[tuple[int, bytes]]:
    """(position, whole batch) from a stream of arbitrary chunks, one batch in memory at a time.

    A zero length ends the data (a preallocated tail); a batch cut short raises, naming where.
    """
    buffer = bytearray()
    position = 0
    for chunk in chunks:
        buffer += chunk
        while len(buffer) >= LOG_OVERHEAD:
            base_offset, length = _PREFIX.unpack_from(buffer)
            if length == 0:
                return
            if length < 0:
                raise CorruptRecordError(
                    source, position, f"negative batch length {length} (offset {base_offset})"
                )
            size = LOG_OVERHEAD + length
            if len(buffer) < size:
                break
            yield position, bytes(buffer[:size])
            del buffer[:size]
            position += size
    if any(buffer):
        raise TruncatedDataError(
            source, position, f"the data ends {len(buffer)} bytes into a batch"
        )
