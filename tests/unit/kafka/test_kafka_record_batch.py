"""Record batch framing, header fields and CRC checks on kafka-python-built batches."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path

import pytest

from tests.unit.kafka.log_builders import (
    BASE_TS,
    GZIP,
    LZ4,
    NO_CODEC,
    SNAPPY,
    ZSTD,
    control_batch,
    legacy_message_set,
    v2_batch,
    value,
    write,
)
from tierflow.kafka.errors import CorruptRecordError, KafkaFormatError, TruncatedDataError
from tierflow.kafka.record_batch import (
    iter_batches,
    iter_batches_in_buffer,
    iter_records,
    valid_bytes,
)

HAS_XXHASH = importlib.util.find_spec("xxhash") is not None


@pytest.mark.parametrize("codec", [NO_CODEC, GZIP, SNAPPY, LZ4, ZSTD])
def test_v2_batches_of_every_codec_read(tmp_path: Path, codec: int) -> None:
    log = write(tmp_path / "x.log", v2_batch(0, 3, codec=codec), v2_batch(3, 4, codec=codec))
    headers = list(iter_batches(log))
    assert [(h.base_offset, h.last_offset, h.records_count) for h in headers] == [
        (0, 2, 3),
        (3, 6, 4),
    ]
    assert {h.compression_type for h in headers} == {codec}
    assert headers[1].position == headers[0].size_in_bytes
    assert headers[1].max_timestamp == BASE_TS + 3
    records = list(iter_records(log))
    assert [r.offset for r in records] == list(range(7))
    assert records[5].value == value(5)


@pytest.mark.parametrize(
    ("magic", "codec"),
    [
        (0, NO_CODEC),
        (0, GZIP),
        (0, SNAPPY),
        pytest.param(
            0, LZ4, marks=pytest.mark.skipif(not HAS_XXHASH, reason="v0 lz4 needs xxhash")
        ),
        (1, NO_CODEC),
        (1, GZIP),
        (1, SNAPPY),
        (1, LZ4),
    ],
)
def test_legacy_message_sets_read(tmp_path: Path, magic: int, codec: int) -> None:
    log = write(tmp_path / "x.log", legacy_message_set(magic, 40, 5, codec=codec))
    headers = list(iter_batches(log))
    assert list(iter_batches(log, validate_crc=False)) == headers
    if codec:
        # One wrapper: base offset is its first inner message, last offset the wrapper's own.
        (wrapper,) = headers
        assert (wrapper.base_offset, wrapper.last_offset) == (40, 44)
        assert wrapper.records_count is None
        assert wrapper.compression_type == codec
    else:
        assert [(h.base_offset, h.last_offset, h.records_count) for h in headers] == [
            (o, o, 1) for o in range(40, 45)
        ]
    # Passing CRCs on compressed wrappers also shows the CRC is checked before decompressing
    # (kafka-python's validate_crc() is wrong afterwards).
    assert {h.magic for h in headers} == {magic}
    assert {h.partition_leader_epoch for h in headers} == {-1}
    assert headers[-1].max_timestamp == (BASE_TS + 4 if magic == 1 else -1)
    assert [r.offset for r in iter_records(log)] == list(range(40, 45))


def test_mixed_magic_log(tmp_path: Path) -> None:
    """A log upgraded across message formats holds v0, v1 and v2 batches side by side."""
    log = write(
        tmp_path / "x.log",
        legacy_message_set(0, 0, 2, codec=GZIP),
        legacy_message_set(1, 2, 2),
        v2_batch(4, 2, codec=ZSTD, leader_epoch=3),
    )
    headers = list(iter_batches(log))
    assert [(h.magic, h.base_offset, h.last_offset) for h in headers] == [
        (0, 0, 1),
        (1, 2, 2),
        (1, 3, 3),
        (2, 4, 5),
    ]
    assert valid_bytes(log) == log.stat().st_size


def test_producer_and_control_fields(tmp_path: Path) -> None:
    log = write(
        tmp_path / "x.log",
        v2_batch(0, 2, producer_id=9, producer_epoch=1, base_sequence=0, transactional=True),
        control_batch(2, producer_id=9, abort=True),
        v2_batch(3, 1, log_append_time=BASE_TS + 999),
    )
    data, marker, appended = iter_batches(log)
    assert (data.producer_id, data.producer_epoch, data.base_sequence) == (9, 1, 0)
    assert data.is_transactional and not data.is_control_batch
    assert marker.is_control_batch and marker.is_transactional
    assert (appended.timestamp_type, appended.max_timestamp) == (1, BASE_TS + 999)
    control_record = list(iter_records(log))[2]
    assert control_record.abort


def test_zero_filled_tail_ends_the_data(tmp_path: Path) -> None:
    batches = v2_batch(0, 2) + v2_batch(2, 2)
    log = write(tmp_path / "x.log", batches, bytes(4096))
    assert [h.base_offset for h in iter_batches(log)] == [0, 2]
    assert valid_bytes(log) == len(batches)
    # A zero tail shorter than one 12-byte prefix also just ends the data.
    short = write(tmp_path / "y.log", batches, bytes(5))
    assert [h.base_offset for h in iter_batches(short)] == [0, 2]


def test_truncated_batch_reports_its_position(tmp_path: Path) -> None:
    first = v2_batch(0, 2)
    log = write(tmp_path / "x.log", first, v2_batch(2, 2)[:-7])
    with pytest.raises(TruncatedDataError) as err:
        list(iter_batches(log))
    assert err.value.position == len(first)
    assert str(err.value).startswith(f"{log}: byte {len(first)}: ")
    assert valid_bytes(log) == len(first)


def test_truncated_prefix_reports_its_position(tmp_path: Path) -> None:
    first = v2_batch(0, 1)
    log = write(tmp_path / "x.log", first, b"\x00\x00\x00\x00\x00\x00\x00\x01\x00")
    with pytest.raises(TruncatedDataError) as err:
        list(iter_batches(log))
    assert err.value.position == len(first)


@pytest.mark.parametrize("codec", [NO_CODEC, GZIP])
def test_bit_flip_fails_the_crc(tmp_path: Path, codec: int) -> None:
    first = v2_batch(0, 2)
    second = bytearray(v2_batch(2, 3, codec=codec))
    second[-3] ^= 0x10
    log = write(tmp_path / "x.log", first, bytes(second))
    with pytest.raises(CorruptRecordError, match="crc mismatch") as err:
        list(iter_batches(log))
    assert err.value.position == len(first)
    assert err.value.path == str(log)
    # Without CRC validation the header still reads; recovery would truncate before it.
    assert [h.base_offset for h in iter_batches(log, validate_crc=False)] == [0, 2]
    assert valid_bytes(log) == len(first)
    with pytest.raises(CorruptRecordError):
        list(iter_records(log))


@pytest.mark.parametrize("magic", [0, 1])
def test_bit_flip_in_legacy_message_fails_the_crc(tmp_path: Path, magic: int) -> None:
    buf = bytearray(legacy_message_set(magic, 0, 3, codec=GZIP))
    buf[-2] ^= 0x01
    log = write(tmp_path / "x.log", bytes(buf))
    with pytest.raises(CorruptRecordError, match="crc") as err:
        list(iter_batches(log))
    assert err.value.position == 0


def test_unknown_magic_and_impossible_length(tmp_path: Path) -> None:
    bad_magic = bytearray(v2_batch(0, 1))
    bad_magic[16] = 7
    with pytest.raises(CorruptRecordError, match="magic byte 7"):
        list(iter_batches(write(tmp_path / "m.log", bytes(bad_magic))))
    for length in (-5, 3):
        tiny = struct.pack(">qi", 0, length) + bytes(40)
        with pytest.raises(CorruptRecordError, match="impossible") as err:
            list(iter_batches(write(tmp_path / "l.log", v2_batch(0, 1), tiny)))
        assert err.value.position == len(v2_batch(0, 1))


def test_start_and_end_positions(tmp_path: Path) -> None:
    chunks = [v2_batch(0, 1), v2_batch(1, 1), v2_batch(2, 1)]
    log = write(tmp_path / "x.log", *chunks)
    second = len(chunks[0])
    assert [h.base_offset for h in iter_batches(log, start_position=second)] == [1, 2]
    assert [h.base_offset for h in iter_batches(log, end_position=second)] == [0]
    with pytest.raises(TruncatedDataError):
        list(iter_batches(log, end_position=second + 10))


def test_buffer_reader_matches_file_reader(tmp_path: Path) -> None:
    data = v2_batch(0, 3, codec=SNAPPY) + legacy_message_set(1, 3, 2, codec=LZ4)
    log = write(tmp_path / "x.log", data)
    assert list(iter_batches_in_buffer(data, source="mem")) == list(iter_batches(log))
    with pytest.raises(KafkaFormatError, match=r"^mem: byte "):
        list(iter_batches_in_buffer(data[:-1], source="mem"))


def test_empty_file_has_no_batches(tmp_path: Path) -> None:
    log = write(tmp_path / "x.log")
    assert list(iter_batches(log)) == []
    assert valid_bytes(log) == 0
