"""Properties of the record batch reader: framing, headers, CRCs and records.

Segments are built with the product's batch builder (v2) and the test builders of legacy
message sets, then read back whole, mutated, or mutated and CRC-resealed so that the damage
reaches the parsing behind the CRC check.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from hypothesis import assume, given
from hypothesis import strategies as st
from kafka.record.util import calc_crc32, calc_crc32c

from tests.fuzz.support import assert_names_file, counted, mutated, scratch_file
from tests.unit.kafka.log_builders import legacy_message_set
from tierflow.kafka.batch_builder import (
    PLAIN_PRODUCER,
    ProducerFields,
    Record,
    build_batch,
    build_control_batch,
)
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.record_batch import iter_batches, iter_batches_in_buffer, iter_records
from tierflow.kafka.records import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD

CODECS = [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD]
INT32 = st.integers(-(2**31), 2**31 - 1)
timestamps = st.integers(0, 2**45)
small_bytes = st.binary(max_size=24)
header_lists = st.lists(
    st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=6)), max_size=2
).map(tuple)
records = st.builds(
    Record,
    key=st.none() | small_bytes,
    value=st.none() | small_bytes | small_bytes.map(lambda b: b * 12),
    timestamp=timestamps,
    headers=header_lists,
)


@dataclass(frozen=True)
class BuiltBatch:
    """What went into one v2 batch, to compare with what is read back."""

    data: bytes
    base_offset: int
    records: tuple[Record, ...]
    leader_epoch: int
    compression: int
    producer_id: int
    transactional: bool
    control: bool


@st.composite
def v2_batches(draw: st.DrawFn, base_offset: int) -> BuiltBatch:
    epoch = draw(st.integers(0, 2**31 - 1))
    if draw(st.integers(0, 9)) == 0:
        pid = draw(st.integers(0, 2**63 - 1))
        data = build_control_batch(
            base_offset=base_offset,
            leader_epoch=epoch,
            producer_id=pid,
            producer_epoch=draw(st.integers(0, 2**15 - 1)),
            commit=draw(st.booleans()),
            timestamp=draw(timestamps),
        )
        return BuiltBatch(data, base_offset, (), epoch, CODEC_NONE, pid, True, True)
    batch_records = tuple(draw(st.lists(records, min_size=1, max_size=5)))
    codec = draw(st.sampled_from(CODECS))
    pid, transactional = -1, False
    producer = PLAIN_PRODUCER
    if draw(st.booleans()):
        pid, transactional = draw(st.integers(0, 2**63 - 1)), draw(st.booleans())
        producer = ProducerFields(
            producer_id=pid,
            producer_epoch=draw(st.integers(0, 2**15 - 1)),
            base_sequence=draw(st.integers(0, 2**31 - 1)),
            transactional=transactional,
        )
    try:
        data = build_batch(
            batch_records,
            base_offset=base_offset,
            leader_epoch=epoch,
            compression=codec,
            producer=producer,
        )
    except ValueError:
        assume(False)  # the codec did not shrink these records; kafka-python stores them plain
    return BuiltBatch(data, base_offset, batch_records, epoch, codec, pid, transactional, False)


@st.composite
def v2_segments(draw: st.DrawFn) -> list[BuiltBatch]:
    offset = draw(st.integers(0, 2**40))
    batches = []
    for _ in range(draw(st.integers(0, 3))):
        batch = draw(v2_batches(offset))
        batches.append(batch)
        offset += max(1, len(batch.records))
    return batches


@st.composite
def legacy_segments(draw: st.DrawFn) -> bytes:
    magic = draw(st.sampled_from([0, 1]))
    codec = draw(st.sampled_from([CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4]))
    count = draw(st.integers(1, 3))
    return legacy_message_set(magic, draw(st.integers(0, 2**40)), count, codec=codec)


def segment_bytes(batches: list[BuiltBatch]) -> bytes:
    return b"".join(b.data for b in batches)


any_segment = st.one_of(v2_segments().map(segment_bytes), legacy_segments())


def reseal(data: bytes) -> bytes:
    """Recompute the CRC of every batch the framing still finds, so damage gets past it."""
    buf = bytearray(data)
    pos = 0
    while pos + 17 <= len(buf):
        (length,) = struct.unpack_from(">i", buf, pos + 8)
        end = pos + 12 + length
        if length <= 0 or end > len(buf):
            break
        magic = buf[pos + 16]
        if magic == 2 and length >= 49:
            struct.pack_into(">I", buf, pos + 17, calc_crc32c(memoryview(buf)[pos + 21 : end]))
        elif magic in (0, 1):
            struct.pack_into(">I", buf, pos + 12, calc_crc32(memoryview(buf)[pos + 16 : end]))
        pos = end
    return bytes(buf)


@given(v2_segments(), st.integers(0, 64))
@counted
def test_v2_segment_round_trip(batches: list[BuiltBatch], zero_tail: int) -> None:
    """Headers and records come back exactly as built; a zero-filled tail is not data."""
    path = scratch_file("00000000000000000000.log", segment_bytes(batches) + bytes(zero_tail))
    headers = list(iter_batches(path))
    assert len(headers) == len(batches)
    position = 0
    for header, built in zip(headers, batches, strict=True):
        assert header.position == position and header.size_in_bytes == len(built.data)
        assert header.magic == 2 and header.base_offset == built.base_offset
        assert header.last_offset == built.base_offset + max(1, len(built.records)) - 1
        assert header.partition_leader_epoch == built.leader_epoch
        assert header.compression_type == built.compression
        assert header.producer_id == built.producer_id
        assert header.is_transactional == built.transactional
        assert header.is_control_batch == built.control
        position += len(built.data)
    assert list(iter_batches(path, validate_crc=False)) == headers
    expected = [
        (b.base_offset + i, r.key, r.value, r.timestamp, list(r.headers))
        for b in batches
        if not b.control
        for i, r in enumerate(b.records)
    ]
    markers = {b.base_offset for b in batches if b.control}
    found = [
        (r.offset, r.key, r.value, r.timestamp, list(r.headers))
        for r in iter_records(path)
        if r.offset not in markers
    ]
    assert found == expected


@given(legacy_segments())
@counted
def test_legacy_segment_round_trip(data: bytes) -> None:
    path = scratch_file("00000000000000000000.log", data)
    headers = list(iter_batches(path))
    assert sum(h.size_in_bytes for h in headers) == len(data)
    offsets = [r.offset for r in iter_records(path)]
    assert offsets == list(range(headers[0].base_offset, headers[-1].last_offset + 1))


def _read_everything(path: str, data: bytes) -> None:
    list(iter_batches(path))
    list(iter_batches(path, validate_crc=False))
    list(iter_records(path))
    list(iter_batches_in_buffer(data, source=path))


@given(st.one_of(mutated(any_segment), mutated(any_segment).map(reseal), st.binary(max_size=120)))
@counted
def test_damaged_segment_raises_format_error(data: bytes) -> None:
    """Damage is a KafkaFormatError naming the file, never some other exception."""
    path = scratch_file("00000000000000000007.log", data)
    try:
        _read_everything(str(path), data)
    except KafkaFormatError as exc:
        assert_names_file(exc, path)


@given(any_segment, st.data())
@counted
def test_crc_catches_every_covered_bit_flip(data: bytes, draw: st.DataObject) -> None:
    """A flipped bit in the CRC-covered part of the first batch is never silently accepted."""
    assume(len(data) > 21)
    covered_from = 21 if data[16] == 2 else 16
    first_batch_end = 12 + struct.unpack_from(">i", data, 8)[0]
    at = draw.draw(st.integers(covered_from, first_batch_end - 1))
    damaged = bytearray(data)
    damaged[at] ^= 1 << draw.draw(st.integers(0, 7))
    path = scratch_file("00000000000000000009.log", bytes(damaged))
    try:
        list(iter_batches(path))
    except KafkaFormatError as exc:
        assert_names_file(exc, path)
        return
    raise AssertionError(f"bit flip at byte {at} was accepted")


@given(v2_segments().map(segment_bytes).map(reseal), st.integers(0, 2**31))
@counted
def test_truncation_reports_position(data: bytes, cut: int) -> None:
    """A segment cut short mid-batch is an error at or before the cut.

    Fewer than 12 zero bytes left over read as a zero-filled tail, as the reader documents.
    """
    assume(data)
    cut %= len(data)
    path = scratch_file("00000000000000000011.log", data[:cut])
    try:
        headers = list(iter_batches(path))
    except KafkaFormatError as exc:
        assert_names_file(exc, path)
        assert exc.position is not None and exc.position <= cut
        return
    read = sum(h.size_in_bytes for h in headers)
    assert read <= cut and not any(data[read:cut]) and cut - read < 12


@given(any_segment, st.integers(0, 7), st.booleans())
@counted
def test_codec_id_outside_kafkas_is_corrupt(data: bytes, codec: int, validate: bool) -> None:
    """Found: a CRC-valid batch with codec id 5 was listed as compression 5, and reading its
    records raised kafka-python's UnsupportedCodecError. Ids 5-7 (4 before magic 2) are
    corrupt batches for Kafka, so every read is a CorruptRecordError naming the file."""
    assume(data)
    magic = data[16]
    attributes_at = 22 if magic == 2 else 17
    damaged = bytearray(data)
    damaged[attributes_at] = (damaged[attributes_at] & ~0x07) | codec
    path = scratch_file("00000000000000000013.log", reseal(bytes(damaged)))
    known = codec < (5 if magic == 2 else 4)
    try:
        headers = list(iter_batches(path, validate_crc=validate))
        list(iter_records(path))
    except KafkaFormatError as exc:
        assert_names_file(exc, path)
        assert known or f"unknown compression codec id {codec}" in str(exc)
        return
    assert known and headers[0].compression_type == codec
