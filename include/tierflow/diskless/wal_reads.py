"""Reading committed batches back out of WAL objects, as a classic segment would hold them.

A run is a stretch of one partition's batches that lie next to each other in one object, so a
run costs one ranged GET. Each batch read is checked against its committed coordinates, and its
assigned base offset and leader epoch (and LogAppendTime's max timestamp) are injected in
memory, as Kafka's LogValidator would; the fetch (``tierflow.read.diskless``) and the merge
both read this way.
"""

from __future__ import annotations

import struct

from crc32c import crc32c

from tierflow.diskless.coordinates import BatchCoordinate
from tierflow.diskless.errors import WalFormatError
from tierflow.diskless.models import LOG_APPEND_TIME
from tierflow.kafka.records import LOG_OVERHEAD
from tierflow.storage.object_store import ObjectStore

_PREFIX = struct.Struct(">qi")
_LEADER_EPOCH_AT = 12
_MAGIC_AT = 16
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_LAST_OFFSET_DELTA_AT = 23
_MAX_TIMESTAMP_AT = 35
_V2_HEADER_SIZE = 61
_LOG_APPEND_TIME_FLAG = 0x08


def runs(batches: list[BatchCoordinate]) -> list[list[BatchCoordinate]]:
    """Consecutive coordinates that one ranged GET can read: same object, adjacent bytes."""
    grouped: list[list[BatchCoordinate]] = []
    for batch in batches:
        last = grouped[-1][-1] if grouped else None
        adjacent = last is not None and last.byte_end == batch.byte_offset
        if adjacent and last is not None and last.object_key == batch.object_key:
            grouped[-1].append(batch)
            continue
        grouped.append([batch])
    return grouped


def read_run(objects: ObjectStore, run: list[BatchCoordinate]) -> list[bytes]:
    """One ranged GET for a run (see ``runs``): its batches, checked and offsets injected."""
    start, end = run[0].byte_offset, run[-1].byte_end
    key = run[0].object_key
    data = objects.read_range(key, start, end)
    if len(data) != end - start:
        raise WalFormatError(
            key, start + len(data), f"object ends early: bytes {start}-{end} were expected"
        )
    return [
        inject(data[b.byte_offset - start : b.byte_offset - start + b.byte_size], b) for b in run
    ]


def inject(data: bytes, batch: BatchCoordinate) -> bytes:
    """The stored batch as a classic segment holds it: assigned base offset and leader epoch
    (and LogAppendTime's max timestamp). The stored batch is checked first: its framing must
    match the coordinates and its CRC must be good."""
    key, at = batch.object_key, batch.byte_offset
    if len(data) < _V2_HEADER_SIZE:
        raise WalFormatError(key, at, f"a {len(data)}-byte batch is shorter than a v2 header")
    _offset, length = _PREFIX.unpack_from(data)
    if length + LOG_OVERHEAD != batch.byte_size:
        raise WalFormatError(
            key, at, f"batch length {length + LOG_OVERHEAD} != {batch.byte_size} committed"
        )
    if data[_MAGIC_AT] != 2:
        raise WalFormatError(key, at, f"magic {data[_MAGIC_AT]} batch in a WAL object")
    (stored_crc,) = struct.unpack_from(">I", data, _CRC_AT)
    if crc32c(memoryview(data)[_ATTRIBUTES_AT:]) != stored_crc:
        raise WalFormatError(key, at, "crc mismatch: the stored batch is damaged")
    (delta,) = struct.unpack_from(">i", data, _LAST_OFFSET_DELTA_AT)
    if delta != batch.last_offset - batch.base_offset:
        raise WalFormatError(
            key,
            at,
            f"lastOffsetDelta {delta} disagrees with offsets "
            f"{batch.base_offset}-{batch.last_offset} committed",
        )
    buf = bytearray(data)
    struct.pack_into(">q", buf, 0, batch.base_offset)
    struct.pack_into(">i", buf, _LEADER_EPOCH_AT, batch.leader_epoch)
    if batch.timestamp_type == LOG_APPEND_TIME:
        (attributes,) = struct.unpack_from(">h", buf, _ATTRIBUTES_AT)
        struct.pack_into(">h", buf, _ATTRIBUTES_AT, attributes | _LOG_APPEND_TIME_FLAG)
        struct.pack_into(">q", buf, _MAX_TIMESTAMP_AT, batch.append_time_ms)
        struct.pack_into(">I", buf, _CRC_AT, crc32c(memoryview(buf)[_ATTRIBUTES_AT:]))
    return bytes(buf)


def next_offset(batch: bytes) -> int:
    """The offset after this batch, from its base offset and lastOffsetDelta."""
    (base,) = struct.unpack_from(">q", batch, 0)
    (delta,) = struct.unpack_from(">i", batch, _LAST_OFFSET_DELTA_AT)
    return base + delta + 1
