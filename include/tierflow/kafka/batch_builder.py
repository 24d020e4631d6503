"""Build magic-2 record batches shaped the way a broker stores them in a segment.

kafka-python's builder writes what a *producer* sends: base offset 0, partition leader epoch 0,
CreateTime and never a control flag. A broker then assigns offsets, stamps its leader epoch and,
for ``LogAppendTime`` topics, its own clock. We let kafka-python encode and compress the records
and then patch exactly those broker-owned header fields, recomputing the CRC where it covers them.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from tierflow.kafka.records import CODEC_GZIP, CODEC_MASK, CODEC_NAMES, CODEC_NONE

CONTROL_TYPE_ABORT = 0
CONTROL_TYPE_COMMIT = 1

# Byte positions in a v2 batch (Kafka's DefaultRecordBatch). The CRC covers ATTRIBUTES.. end.
_BASE_OFFSET_AT = 0
_LEADER_EPOCH_AT = 12
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35
_HEADER_SIZE = 61

_LOG_APPEND_TIME_FLAG = 0x08
_CONTROL_FLAG = 0x20

_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_MTIME_AT = 4  # inside the gzip member header; not covered by gzip's own CRC
_NO_BATCH_LIMIT = 1 << 30


@dataclass(frozen=True)
class Record:
    """One record as a producer hands it over; offsets are assigned by the batch."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class ProducerFields:
    """The producer's part of a batch header: its id and epoch, the first record's sequence
    (an idempotent producer's), and whether the batch belongs to a transaction. The defaults
    are a plain producer's: none of them."""

    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    transactional: bool = False


PLAIN_PRODUCER = ProducerFields()


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int,
    leader_epoch: int,
    compression: int = CODEC_NONE,
    producer: ProducerFields = PLAIN_PRODUCER,
    log_append_time: int | None = None,
    offset_deltas: Sequence[int] | None = None,
    require_codec: bool = True,
) -> bytes:
    """Encode ``records`` as one broker-shaped batch starting at ``base_offset``, written by
    ``producer``.

    ``offset_deltas`` place the records at those offsets past ``base_offset`` (ascending), as
    a cleaned batch keeps its records' offsets; by default they are consecutive.

    Raises ValueError when a compressed codec was asked for but kafka-python fell back to
    storing the records uncompressed (it does so silently when compression does not shrink
    them); callers that want a given codec on disk must hand over compressible records.
    ``require_codec`` False takes that fallback (a cleaned batch of a few records).
    """
    if not records:
        raise ValueError("a record batch needs at least one record")
    if compression not in CODEC_NAMES:
        raise ValueError(f"unknown compression codec id {compression}")
    _check_producer_fields(producer)
    builder = _builder(compression, producer)
    for delta, record in zip(offset_deltas or range(len(records)), records, strict=True):
        builder.append(
            delta,
            timestamp=record.timestamp,
            key=record.key,
            value=record.value,
            headers=list(record.headers),
        )
    buf = bytearray(builder.build())
    stored_codec = buf[_ATTRIBUTES_AT + 1] & CODEC_MASK
    if stored_codec != compression and require_codec:
        raise ValueError(
            f"{CODEC_NAMES[compression]} did not shrink {len(records)} record(s), so the batch "
            "would be stored uncompressed; use larger or more repetitive records"
        )
    return _as_broker_wrote_it(buf, base_offset, leader_epoch, log_append_time)


def _as_broker_wrote_it(
    buf: bytearray, base_offset: int, leader_epoch: int, log_append_time: int | None
) -> bytes:
    """The broker-owned fields patched in, and the CRC recomputed where they are covered."""
    needs_crc = False
    if buf[_ATTRIBUTES_AT + 1] & CODEC_MASK == CODEC_GZIP:
        needs_crc = _zero_gzip_mtime(buf)
    if log_append_time is not None:
        _set_attribute_flag(buf, _LOG_APPEND_TIME_FLAG)
        struct.pack_into(">q", buf, _MAX_TIMESTAMP_AT, log_append_time)
        needs_crc = True
    if needs_crc:
        _recompute_crc(buf)
    _stamp_broker_fields(buf, base_offset, leader_epoch)
    return bytes(buf)


def build_control_batch(
    *,
    base_offset: int,
    leader_epoch: int,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    timestamp: int,
    coordinator_epoch: int = 0,
) -> bytes:
    """Encode the COMMIT/ABORT marker the transaction coordinator has the leader append.

    Markers carry the producer id and epoch but no sequence (Kafka writes -1 there).
    """
    if producer_id < 0 or producer_epoch < 0:
        raise ValueError("a transaction marker needs a producer id and epoch")
    control_type = CONTROL_TYPE_COMMIT if commit else CONTROL_TYPE_ABORT
    # EndTransactionMarker: key = (version int16, type int16), value = (version, coordinatorEpoch)
    builder = _builder(CODEC_NONE, ProducerFields(producer_id, producer_epoch, transactional=True))
    value = struct.pack(">hi", 0, coordinator_epoch)
    return _control_batch(builder, base_offset, leader_epoch, control_type, value, timestamp)


def build_raft_control_batch(
    *, base_offset: int, leader_epoch: int, control_type: int, value: bytes, timestamp: int
) -> bytes:
    """One KRaft control record (LEADER_CHANGE 2, SNAPSHOT_HEADER 3, SNAPSHOT_FOOTER 4, ...).

    The Raft client writes these as non-transactional control batches without a producer.
    """
    builder = _builder(CODEC_NONE, PLAIN_PRODUCER)
    return _control_batch(builder, base_offset, leader_epoch, control_type, value, timestamp)


def _builder(compression: int, producer: ProducerFields) -> DefaultRecordBatchBuilder:
    """kafka-python's magic-2 builder, with no size limit: the caller decides what one batch is."""
    return DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=producer.transactional,
        producer_id=producer.producer_id,
        producer_epoch=producer.producer_epoch,
        base_sequence=producer.base_sequence,
        batch_size=_NO_BATCH_LIMIT,
    )


def _control_batch(
    builder: DefaultRecordBatchBuilder,
    base_offset: int,
    leader_epoch: int,
    control_type: int,
    value: bytes,
    timestamp: int,
) -> bytes:
    """One control record (key = version 0 + ``control_type``), flagged as control.

    kafka-python never sets the control flag, so it is patched in and the CRC recomputed.
    """
    builder.append(
        0, timestamp=timestamp, key=struct.pack(">hh", 0, control_type), value=value, headers=[]
    )
    buf = bytearray(builder.build())
    _set_attribute_flag(buf, _CONTROL_FLAG)
    _recompute_crc(buf)
    _stamp_broker_fields(buf, base_offset, leader_epoch)
    return bytes(buf)


def _check_producer_fields(producer: ProducerFields) -> None:
    """Reject combinations a broker would refuse, before they end up on disk."""
    if producer.transactional and producer.producer_id < 0:
        raise ValueError("a transactional batch needs a producer id")
    if producer.producer_id >= 0 and (producer.producer_epoch < 0 or producer.base_sequence < 0):
        raise ValueError(
            f"producer {producer.producer_id} needs a producer epoch and a base sequence"
        )


def _stamp_broker_fields(buf: bytearray, base_offset: int, leader_epoch: int) -> None:
    """Both fields sit before the CRC-covered range, so no CRC update is needed."""
    if base_offset < 0:
        raise ValueError(f"base offset must be >= 0, got {base_offset}")
    struct.pack_into(">q", buf, _BASE_OFFSET_AT, base_offset)
    struct.pack_into(">i", buf, _LEADER_EPOCH_AT, leader_epoch)


def _set_attribute_flag(buf: bytearray, flag: int) -> None:
    (attributes,) = struct.unpack_from(">h", buf, _ATTRIBUTES_AT)
    struct.pack_into(">h", buf, _ATTRIBUTES_AT, attributes | flag)


def _recompute_crc(buf: bytearray) -> None:
    struct.pack_into(">I", buf, _CRC_AT, calc_crc32c(memoryview(buf)[_ATTRIBUTES_AT:]))


def _zero_gzip_mtime(buf: bytearray) -> bool:
    """Python's gzip stamps the wall clock into its header; zero it for reproducible bytes."""
    start = _HEADER_SIZE
    if buf[start : start + 2] != _GZIP_MAGIC:
        return False
    struct.pack_into("<I", buf, start + _GZIP_MTIME_AT, 0)
    return True
