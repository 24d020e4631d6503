"""Batches from tierflow.kafka.batch_builder must read back like broker-written ones."""

from __future__ import annotations

import gzip
import json
import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch

from tierflow.kafka.batch_builder import ProducerFields, Record, build_batch, build_control_batch
from tierflow.kafka.records import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_SNAPPY, CODEC_ZSTD

T0 = 1_700_000_000_000


def order_records(count: int) -> list[Record]:
    return [
        Record(
            key=f"cust-{i:04d}".encode(),
            value=json.dumps({"order_id": f"ord-{i:06d}", "status": "CREATED", "qty": i}).encode(),
            timestamp=T0 + 10 * i - (15 if i == 2 else 0),
            headers=(("trace", f"t{i}".encode()), ("empty", None)),
        )
        for i in range(count)
    ]


def read(raw: bytes) -> DefaultRecordBatch:
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc()
    return batch


@pytest.mark.parametrize("codec", [CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4, CODEC_ZSTD])
def test_data_batch_is_broker_shaped(codec: int) -> None:
    records = order_records(6)
    raw = build_batch(
        records,
        base_offset=1_234,
        leader_epoch=7,
        compression=codec,
        producer=ProducerFields(
            producer_id=4_242, producer_epoch=3, base_sequence=90, transactional=True
        ),
    )
    batch = read(raw)
    assert len(raw) == batch.size_in_bytes
    assert (batch.base_offset, batch.last_offset, batch.leader_epoch) == (1_234, 1_239, 7)
    assert batch.compression_type == codec
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4_242, 3, 90)
    assert batch.is_transactional and not batch.is_control_batch
    assert batch.timestamp_type == 0
    assert batch.first_timestamp == T0 and batch.max_timestamp == T0 + 50
    decoded = list(batch)
    assert [r.offset for r in decoded] == list(range(1_234, 1_240))
    assert [(r.key, r.value, r.timestamp) for r in decoded] == [
        (r.key, r.value, r.timestamp) for r in records
    ]
    assert decoded[1].headers == [("trace", b"t1"), ("empty", None)]


def test_log_append_time_replaces_timestamps_and_keeps_crc_valid() -> None:
    raw = build_batch(order_records(4), base_offset=0, leader_epoch=0, log_append_time=T0 + 999)
    batch = read(raw)
    assert batch.timestamp_type == 1
    assert batch.max_timestamp == T0 + 999
    assert {record.timestamp for record in batch} == {T0 + 999}


def test_gzip_batches_do_not_depend_on_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    builds = []
    for clock in (1.0, 2_000_000_000.0):
        monkeypatch.setattr(gzip.time, "time", lambda clock=clock: clock)
        builds.append(
            build_batch(order_records(5), base_offset=5, leader_epoch=1, compression=CODEC_GZIP)
        )
    assert builds[0] == builds[1]
    assert read(builds[0]).compression_type == CODEC_GZIP


def test_incompressible_batch_is_refused_instead_of_silently_uncompressed() -> None:
    tiny = [Record(key=None, value=b"x", timestamp=T0)]
    with pytest.raises(ValueError, match="lz4 did not shrink"):
        build_batch(tiny, base_offset=0, leader_epoch=0, compression=CODEC_LZ4)


@pytest.mark.parametrize("commit", [True, False])
def test_control_batch(commit: bool) -> None:
    raw = build_control_batch(
        base_offset=77,
        leader_epoch=4,
        producer_id=9_000,
        producer_epoch=2,
        commit=commit,
        timestamp=T0,
        coordinator_epoch=13,
    )
    batch = read(raw)
    assert batch.is_control_batch and batch.is_transactional
    assert (batch.base_offset, batch.last_offset, batch.leader_epoch) == (77, 77, 4)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (9_000, 2, -1)
    (marker,) = list(batch)
    assert (marker.commit, marker.abort) == (commit, not commit)
    assert struct.unpack(">hi", marker.value) == (0, 13)


def test_rejects_what_a_broker_would_refuse() -> None:
    records = order_records(2)
    with pytest.raises(ValueError, match="at least one record"):
        build_batch([], base_offset=0, leader_epoch=0)
    with pytest.raises(ValueError, match="transactional batch needs a producer id"):
        build_batch(
            records, base_offset=0, leader_epoch=0, producer=ProducerFields(transactional=True)
        )
    with pytest.raises(ValueError, match="base sequence"):
        build_batch(
            records,
            base_offset=0,
            leader_epoch=0,
            producer=ProducerFields(producer_id=5, producer_epoch=0),
        )
    with pytest.raises(ValueError, match="codec id 9"):
        build_batch(records, base_offset=0, leader_epoch=0, compression=9)
    with pytest.raises(ValueError, match="base offset"):
        build_batch(records, base_offset=-1, leader_epoch=0)
    with pytest.raises(ValueError, match="producer id and epoch"):
        build_control_batch(
            base_offset=0,
            leader_epoch=0,
            producer_id=-1,
            producer_epoch=0,
            commit=True,
            timestamp=0,
        )
