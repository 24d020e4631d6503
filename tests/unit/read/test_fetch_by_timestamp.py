"""fetch_remote by timestamp against a brute-force scan of the local files (Kafka's R4)."""

from __future__ import annotations

import pytest
from kafka.record.default_records import DefaultRecordBatch

from tests.support.tiered import Tiered
from tests.unit.read.conftest import finished, local_batches, partitions
from tierflow.read.fetch import (
    FetchRequest,
    TimestampNotFoundError,
    fetch_remote,
    find_offset_by_timestamp,
)
from tierflow.read.index_cache.memory import RemoteIndexCache


def brute_force(t: Tiered, topic: str, partition: int, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after ``timestamp`` in the first remote
    segment whose max timestamp reaches it, scanning every local record."""
    batches = local_batches(t, topic, partition)
    for seg in finished(t, topic, partition):
        if seg.max_timestamp_ms < timestamp:
            continue
        for batch in batches:
            if not seg.start_offset <= batch.header.base_offset <= seg.end_offset:
                continue
            for record in DefaultRecordBatch(batch.data):
                if record.timestamp >= timestamp:
                    return record.offset, record.timestamp
        return None
    return None


def sample_timestamps(t: Tiered, topic: str, partition: int) -> list[int]:
    timestamps = []
    for batch in local_batches(t, topic, partition)[::7]:
        records = list(DefaultRecordBatch(batch.data))
        middle = records[len(records) // 2].timestamp
        timestamps += [middle - 1, middle, middle + 1, batch.header.max_timestamp + 1]
    return timestamps


def test_timestamp_fetch_agrees_with_a_scan_of_the_local_files(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    compared = 0
    for topic, partition in partitions(tiered):
        last_remote_ts = finished(tiered, topic, partition)[-1].max_timestamp_ms
        batches = local_batches(tiered, topic, partition)
        for timestamp in sample_timestamps(tiered, topic, partition):
            if timestamp > last_remote_ts:
                continue
            expected = brute_force(tiered, topic, partition, timestamp)
            assert expected is not None
            result = fetch_remote(
                tiered.store,
                tiered.rsm,
                FetchRequest(topic, partition, timestamp=timestamp, max_bytes=1),
                index_cache=cache,
            )
            match = result.timestamp_match
            assert match is not None
            assert (match.offset, match.timestamp) == expected, (topic, partition, timestamp)
            containing = next(
                b for b in batches if b.header.base_offset <= match.offset <= b.header.last_offset
            )
            assert result.batches == [containing.data]
            assert match.leader_epoch == containing.header.partition_leader_epoch
            compared += 1
    assert compared > 100


def test_a_timestamp_before_everything_finds_the_log_start(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    match = find_offset_by_timestamp(tiered.store, tiered.rsm, "orders", 1, 0, index_cache=cache)
    assert match is not None
    assert match.offset == 0


def test_a_timestamp_after_every_remote_record_is_not_found(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    latest = finished(tiered, "orders", 0)[-1].max_timestamp_ms
    assert (
        find_offset_by_timestamp(
            tiered.store, tiered.rsm, "orders", 0, latest + 1, index_cache=cache
        )
        is None
    )
    with pytest.raises(TimestampNotFoundError, match=f"orders-0: .*>= {latest + 1}"):
        fetch_remote(tiered.store, tiered.rsm, FetchRequest("orders", 0, timestamp=latest + 1))


def test_timestamp_fetch_reads_far_less_than_the_segment(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    seg = finished(tiered, "payments", 0)[1]
    timestamp = (seg.max_timestamp_ms + finished(tiered, "payments", 0)[0].max_timestamp_ms) // 2
    result = fetch_remote(
        tiered.store,
        tiered.rsm,
        FetchRequest("payments", 0, timestamp=timestamp, max_bytes=1),
        index_cache=cache,
    )
    assert result.segments_read == [seg.segment_id]
    assert result.remote_bytes_read < seg.segment_size_bytes / 3
