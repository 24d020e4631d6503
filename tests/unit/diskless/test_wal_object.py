"""The WAL segment object format: version byte 0, per-partition runs, offsets unset."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from tests.diskless.diskless_support import TOPIC_ID, producer_batch_bytes, records
from tierflow.diskless.errors import InvalidProduceBatchError, WalFormatError
from tierflow.diskless.wal_object import (
    PlacedBatch,
    check_runs,
    encode_wal_object,
    producer_batch,
    read_wal_object,
)
from tierflow.kafka.batch_builder import ProducerFields, build_batch, build_control_batch
from tierflow.kafka.errors import TruncatedDataError
from tierflow.kafka.records import CODEC_ZSTD
from tierflow.storage.wal_keys import is_wal_object_key, new_wal_object_key, wal_prefix

KEY = "diskless/wal/6f1c1c33-2a55-4c43-9b3e-4d7d6d2b6f10"
OTHER = "AAAAAAAAAAAAAAAAAAAAAg"


def _batch(partition: int, tag: str, count: int = 2, topic_id: str = TOPIC_ID):
    return producer_batch(topic_id, partition, producer_batch_bytes(tag, count), source=tag)


def test_round_trip_groups_partitions_into_runs_in_arrival_order() -> None:
    arrivals = [
        _batch(1, "a"),
        _batch(0, "b"),
        _batch(1, "c", 3),
        _batch(0, "d"),
        _batch(0, "e", 1, topic_id=OTHER),
    ]
    wal = encode_wal_object(arrivals)
    assert wal.data[0] == 0, "version byte"
    order = [(b.topic_id, b.partition) for b in wal.batches]
    assert order == [(OTHER, 0), (TOPIC_ID, 0), (TOPIC_ID, 0), (TOPIC_ID, 1), (TOPIC_ID, 1)]
    headers = read_wal_object(wal.data, KEY)
    assert [(h.position, h.size_in_bytes) for h in headers] == [
        (b.byte_offset, b.byte_size) for b in wal.batches
    ]
    values = [
        [r.value for r in DefaultRecordBatch(wal.data[b.byte_offset : b.byte_offset + b.byte_size])]
        for b in wal.batches
    ]
    assert [v[0][:3] for v in values] == [b"e#0", b"b#0", b"d#0", b"a#0", b"c#0"]
    assert [b.offset_count for b in wal.batches] == [1, 2, 2, 2, 3]
    assert all(h.base_offset == 0 and h.partition_leader_epoch == -1 for h in headers)
    check_runs(wal.batches, wal.size, KEY)


def test_offsets_of_a_classic_batch_are_unset_and_its_crc_still_holds() -> None:
    classic = build_batch(records("x", 5), base_offset=1234, leader_epoch=7, compression=CODEC_ZSTD)
    batch = producer_batch(TOPIC_ID, 0, classic, source="seg.log")
    assert struct.unpack_from(">qii", batch.data) == (0, len(classic) - 12, -1)
    assert batch.data[16:] == classic[16:], "only the offset and the leader epoch change"
    assert DefaultRecordBatch(batch.data).validate_crc()
    assert batch.offset_count == 5


def test_bad_version_names_the_key_and_byte_zero() -> None:
    wal = encode_wal_object([_batch(0, "a")])
    with pytest.raises(WalFormatError, match=rf"^{KEY}: byte 0: unsupported WAL segment version 3"):
        read_wal_object(b"\x03" + wal.data[1:], KEY)
    with pytest.raises(WalFormatError, match=rf"^{KEY}: byte 0: empty object"):
        read_wal_object(b"", KEY)


def test_truncation_names_the_key_and_the_batch_position() -> None:
    wal = encode_wal_object([_batch(0, "a"), _batch(1, "b")])
    second = wal.batches[1].byte_offset
    expected = rf"^{KEY}: byte {second}: batch at offset 0 needs"
    with pytest.raises(TruncatedDataError, match=expected):
        read_wal_object(wal.data[:-5], KEY)


def test_stray_bytes_after_the_last_batch_are_refused() -> None:
    wal = encode_wal_object([_batch(0, "a")])
    with pytest.raises(WalFormatError, match=rf"byte {wal.size}: 3 byte\(s\) after the last"):
        read_wal_object(wal.data + b"\x00\x00\x00", KEY)


def test_runs_must_be_contiguous_per_partition() -> None:
    def placed(partition: int, at: int) -> PlacedBatch:
        return PlacedBatch(TOPIC_ID, partition, at, 10, 1, 0)

    check_runs([placed(0, 1), placed(0, 11), placed(1, 21)], 31, KEY)
    with pytest.raises(WalFormatError, match=r"partition .*-0 has more than one run"):
        check_runs([placed(0, 1), placed(1, 11), placed(0, 21)], 31, KEY)
    with pytest.raises(WalFormatError, match="expected byte 11"):
        check_runs([placed(0, 1), placed(0, 12)], 31, KEY)
    with pytest.raises(WalFormatError, match="past the object's 20 bytes"):
        check_runs([placed(0, 1), placed(0, 11)], 20, KEY)


def test_produce_requests_that_are_not_producer_batches_are_refused_with_their_position() -> None:
    transactional = build_batch(
        records("t", 2),
        base_offset=0,
        leader_epoch=-1,
        producer=ProducerFields(
            producer_id=9, producer_epoch=0, base_sequence=0, transactional=True
        ),
    )
    with pytest.raises(InvalidProduceBatchError, match=r"f\.log: byte 100: transactional"):
        producer_batch(TOPIC_ID, 0, transactional, source="f.log", position=100)
    marker = build_control_batch(
        base_offset=0, leader_epoch=0, producer_id=9, producer_epoch=0, commit=True, timestamp=1
    )
    with pytest.raises(InvalidProduceBatchError, match="control batches"):
        producer_batch(TOPIC_ID, 0, marker, source="f.log")
    legacy = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(0, timestamp=1, key=None, value=b"v")
    with pytest.raises(InvalidProduceBatchError, match="magic 1 batch: diskless topics take"):
        producer_batch(TOPIC_ID, 0, bytes(legacy.build()), source="f.log")
    damaged = bytearray(producer_batch_bytes("d", 2))
    damaged[-1] ^= 0xFF
    with pytest.raises(InvalidProduceBatchError, match=r"f\.log: byte 40: crc mismatch"):
        producer_batch(TOPIC_ID, 0, bytes(damaged), source="f.log", position=40)
    two = producer_batch_bytes("a", 1) + producer_batch_bytes("b", 1)
    with pytest.raises(InvalidProduceBatchError, match="exactly one record batch"):
        producer_batch(TOPIC_ID, 0, two, source="f.log")


def test_keys_are_uuids_under_the_storage_prefix() -> None:
    key = new_wal_object_key("cluster-a/")
    assert key.startswith("cluster-a/diskless/wal/") and wal_prefix("/cluster-a") == (
        "cluster-a/diskless/wal/"
    )
    assert is_wal_object_key(key, "cluster-a")
    assert key != new_wal_object_key("cluster-a")
    assert not is_wal_object_key("cluster-a/diskless/wal/not-a-uuid", "cluster-a")
    assert not is_wal_object_key("orders-x/0/00000000000000000000-y.log", "cluster-a")
