"""Aiven's compression heuristic reads the segment's first batch: a sound v2 batch is read in
place (kafka.batch_scan.sound_v2_codec), anything else by record_batch's walk over
kafka-python. Both must say what kafka-python says the first batch's codec is, and an
unreadable first batch counts as compressed (uploaded as it is), as Aiven does."""

from __future__ import annotations

import pytest

from tests.unit.kafka.log_builders import legacy_message_set, v2_batch
from tierflow.kafka.batch_scan import sound_v2_codec
from tierflow.kafka.record_batch import iter_batches_in_buffer
from tierflow.kafka.records import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD
from tierflow.transform.compression import first_batch_compressed, split_first_batch

CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD)


def kafka_python_codec(data: bytes) -> int:
    """The oracle: the first batch's codec as record_batch (kafka-python) reads it."""
    return next(iter_batches_in_buffer(data, source="first", validate_crc=True)).compression_type


@pytest.mark.parametrize("codec", CODECS)
def test_a_sound_v2_batch_is_read_in_place(codec: int) -> None:
    data = v2_batch(100, 5, codec=codec) + v2_batch(105, 5)
    head, _ = split_first_batch([data[:7], data[7:]])
    assert sound_v2_codec(head) == kafka_python_codec(data) == codec
    assert first_batch_compressed(head, "first") is (codec != CODEC_NONE)


@pytest.mark.parametrize(("magic", "codec"), [(0, CODEC_NONE), (1, CODEC_NONE), (1, CODEC_GZIP)])
def test_a_legacy_first_batch_goes_to_the_walk(magic: int, codec: int) -> None:
    data = legacy_message_set(magic, 0, 3, codec=codec)
    assert sound_v2_codec(data) is None
    assert first_batch_compressed(data, "first") is (kafka_python_codec(data) != CODEC_NONE)


def test_a_damaged_or_missing_first_batch_counts_as_compressed() -> None:
    damaged = bytearray(v2_batch(0, 3))
    damaged[-1] ^= 0xFF  # the CRC no longer matches
    assert sound_v2_codec(bytes(damaged)) is None
    assert first_batch_compressed(bytes(damaged), "first") is True
    assert first_batch_compressed(b"", "first") is True
