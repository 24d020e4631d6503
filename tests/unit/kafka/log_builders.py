"""Batch builders for the Kafka format tests, on top of kafka-python's own builders.

v2 batches come from the product's ``tierflow.kafka.batch_builder``. Legacy (v0/v1) message sets
are built here: kafka-python writes them producer-shaped (wrapper offset 0), and these helpers
patch them into what a broker stores, resealing the CRC where the patch is covered by it.
"""

from __future__ import annotations

import struct
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.util import calc_crc32, calc_crc32c

from tierflow.kafka.batch_builder import ProducerFields, Record, build_batch, build_control_batch

# ../shared/kafka-samples beside the project root.
SAMPLES = Path(__file__).resolve().parents[3].parent / "shared" / "kafka-samples"

BASE_TS = 1_700_000_000_000
NO_CODEC, GZIP, SNAPPY, LZ4, ZSTD = range(5)


def value(offset: int) -> bytes:
    """Repetitive enough that every codec really compresses it (else the builder falls back)."""
    return (b"value-%d " % offset) * 20


def _reseal_v2(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, DefaultRecordBatch.CRC_OFFSET, calc_crc32c(memoryview(buf)[21:]))
    return bytes(buf)


def v2_batch(
    base_offset: int,
    count: int = 1,
    *,
    codec: int = NO_CODEC,
    leader_epoch: int = 0,
    timestamp: int = BASE_TS,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
    log_append_time: int | None = None,
) -> bytes:
    """A broker-shaped v2 batch of ``count`` compressible records, via the product's builder."""
    records = [
        Record(b"key-%d" % (base_offset + delta), value(base_offset + delta), timestamp + delta)
        for delta in range(count)
    ]
    return build_batch(
        records,
        base_offset=base_offset,
        leader_epoch=leader_epoch,
        compression=codec,
        producer=ProducerFields(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            transactional=transactional,
        ),
        log_append_time=log_append_time,
    )


def control_batch(offset: int, *, producer_id: int, abort: bool, leader_epoch: int = 0) -> bytes:
    """A transaction marker (ABORT or COMMIT) with coordinator epoch 7."""
    return build_control_batch(
        base_offset=offset,
        leader_epoch=leader_epoch,
        producer_id=producer_id,
        producer_epoch=0,
        commit=not abort,
        timestamp=BASE_TS,
        coordinator_epoch=7,
    )


def legacy_message_set(
    magic: int, base_offset: int, count: int = 1, *, codec: int = NO_CODEC
) -> bytes:
    """v0/v1 messages as a broker stores them.

    Uncompressed: one message per offset. Compressed: one wrapper whose offset is the last inner
    offset; v1 inner offsets are relative (0..n-1), v0 inner offsets are absolute, and a v1
    wrapper carries the max timestamp (which needs a fresh CRC-32 from the magic byte on).
    """
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i in range(count):
        inner = i if codec and magic == 1 else base_offset + i
        builder.append(inner, BASE_TS + i if magic else None, b"key-%d" % i, value(i))
    buf = bytearray(builder.build())
    if codec:
        struct.pack_into(">q", buf, 0, base_offset + count - 1)
        if magic == 1:
            struct.pack_into(">q", buf, 18, BASE_TS + count - 1)
            struct.pack_into(">I", buf, 12, calc_crc32(memoryview(buf)[16:]))
    return bytes(buf)


def write(path: Path, *chunks: bytes) -> Path:
    path.write_bytes(b"".join(chunks))
    return path
