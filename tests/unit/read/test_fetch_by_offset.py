"""fetch_remote by offset against tiered generated data: Kafka's RemoteLogManager.read."""

from __future__ import annotations

import pytest

from tests.support.tiered import Tiered
from tests.unit.read.conftest import finished, local_batches, partitions
from tierflow.read.fetch import FetchRequest, OffsetOutOfRangeError, fetch_remote
from tierflow.read.index_cache.memory import RemoteIndexCache
from tierflow.rsm import IndexType
from tierflow.segment_refs import remote_segment


def remote_local_batches(t: Tiered, topic: str, partition: int):
    """Local batches whose offsets are tiered, by remote segment."""
    batches = local_batches(t, topic, partition)
    return {
        seg.segment_id: [
            b for b in batches if seg.start_offset <= b.header.base_offset <= seg.end_offset
        ]
        for seg in finished(t, topic, partition)
    }


def test_offset_in_the_middle_of_a_segment_returns_its_batch_byte_identical(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    checked = set()
    for topic, partition in partitions(tiered):
        for segment_id, batches in remote_local_batches(tiered, topic, partition).items():
            middle = batches[len(batches) // 2]
            for offset in {middle.header.base_offset, middle.header.last_offset}:
                result = fetch_remote(
                    tiered.store,
                    tiered.rsm,
                    FetchRequest(topic, partition, offset=offset, max_bytes=1),
                    index_cache=cache,
                )
                assert result.batches == [middle.data]
                assert result.first_offset == middle.header.base_offset
                assert result.next_offset == middle.header.last_offset + 1
                assert result.segments_read == [segment_id]
                assert result.found[0].header.position == middle.header.position
                checked.add(segment_id)
    assert len(checked) == 7


def test_every_offset_of_a_segment_starts_at_the_batch_containing_it(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    batches = local_batches(tiered, "payments", 0)
    seg = finished(tiered, "payments", 0)[1]
    for local in [b for b in batches if seg.start_offset <= b.header.base_offset <= seg.end_offset]:
        for offset in range(local.header.base_offset, local.header.last_offset + 1):
            result = fetch_remote(
                tiered.store,
                tiered.rsm,
                FetchRequest("payments", 0, offset=offset, max_bytes=1),
                index_cache=cache,
            )
            assert result.batches == [local.data], offset


def test_a_fetch_continues_into_the_next_segment(tiered: Tiered, cache: RemoteIndexCache) -> None:
    first, second = finished(tiered, "orders", 0)[:2]
    by_segment = remote_local_batches(tiered, "orders", 0)
    tail = by_segment[first.segment_id][-2:]
    head = by_segment[second.segment_id][:3]
    wanted = [b.data for b in tail + head]
    result = fetch_remote(
        tiered.store,
        tiered.rsm,
        FetchRequest(
            "orders", 0, offset=tail[0].header.base_offset, max_bytes=sum(len(d) for d in wanted)
        ),
        index_cache=cache,
    )
    assert result.batches == wanted
    assert result.segments_read == [first.segment_id, second.segment_id]
    assert result.next_offset == head[-1].header.last_offset + 1
    # The second segment starts at its beginning: no index download was needed for it.
    assert second.segment_id not in cache


def test_a_fetch_stops_at_the_last_remote_offset(tiered: Tiered, cache: RemoteIndexCache) -> None:
    last = finished(tiered, "orders", 0)[-1]
    batches = remote_local_batches(tiered, "orders", 0)[last.segment_id]
    result = fetch_remote(
        tiered.store,
        tiered.rsm,
        FetchRequest("orders", 0, offset=batches[-3].header.base_offset, max_bytes=10 << 20),
        index_cache=cache,
    )
    assert result.batches == [b.data for b in batches[-3:]]
    assert result.next_offset == last.end_offset + 1
    assert result.segments_read == [last.segment_id]


@pytest.mark.parametrize("max_bytes", [1, 500, 2_000, 5_000, 20_000, 100_000])
def test_max_bytes_returns_whole_batches_and_at_least_one(
    tiered: Tiered, cache: RemoteIndexCache, max_bytes: int
) -> None:
    batches = local_batches(tiered, "orders", 1)
    start = batches[20]
    expected = [start.data]
    for following in batches[21:]:
        if sum(map(len, expected)) + len(following.data) > max_bytes:
            break
        expected.append(following.data)
    result = fetch_remote(
        tiered.store,
        tiered.rsm,
        FetchRequest("orders", 1, offset=start.header.base_offset + 1, max_bytes=max_bytes),
        index_cache=cache,
    )
    assert result.batches == expected
    assert result.size_in_bytes <= max_bytes or len(result.batches) == 1


def test_a_batch_larger_than_max_bytes_is_returned_whole(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    biggest = max(local_batches(tiered, "orders", 0)[:100], key=lambda b: len(b.data))
    result = fetch_remote(
        tiered.store,
        tiered.rsm,
        FetchRequest(
            "orders", 0, offset=biggest.header.base_offset, max_bytes=len(biggest.data) - 1
        ),
        index_cache=cache,
    )
    assert result.batches == [biggest.data]


def test_only_the_needed_bytes_are_read(tiered: Tiered) -> None:
    cache = RemoteIndexCache()
    seg = finished(tiered, "orders", 0)[1]
    middle = remote_local_batches(tiered, "orders", 0)[seg.segment_id][30]
    request = FetchRequest("orders", 0, offset=middle.header.base_offset, max_bytes=1)
    cold = fetch_remote(tiered.store, tiered.rsm, request, index_cache=cache)
    warm = fetch_remote(tiered.store, tiered.rsm, request, index_cache=cache)
    assert cold.batches == warm.batches == [middle.data]
    assert cold.remote_bytes_read < seg.segment_size_bytes / 4
    ref = remote_segment(tiered.store.topic("orders"), seg)
    index_size = len(tiered.rsm.fetch_index(ref, IndexType.OFFSET))
    # The warm fetch found the offset index in the cache: it read the log window only.
    assert warm.remote_bytes_read == cold.remote_bytes_read - index_size
    assert cache.stats.hits >= 1


def test_offsets_beyond_the_remote_range_are_out_of_range(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    last = finished(tiered, "orders", 0)[-1]
    with pytest.raises(OffsetOutOfRangeError) as caught:
        fetch_remote(
            tiered.store,
            tiered.rsm,
            FetchRequest("orders", 0, offset=last.end_offset + 1),
            index_cache=cache,
        )
    message = str(caught.value)
    assert "orders-0" in message
    assert f"offset {last.end_offset + 1}" in message
    assert f"offsets 0-{last.end_offset}" in message
    assert caught.value.remote_range == (0, last.end_offset)


def test_offsets_below_the_log_start_are_out_of_range(
    fresh_tiered: Tiered, cache: RemoteIndexCache
) -> None:
    t = fresh_tiered
    topic_id = t.store.topic("payments").topic_id
    t.store.ensure_partition(topic_id, 0, log_start_offset=100, local_log_start_offset=729)
    with pytest.raises(OffsetOutOfRangeError) as caught:
        fetch_remote(t.store, t.rsm, FetchRequest("payments", 0, offset=99), index_cache=cache)
    assert "payments-0: offset 99 is out of range" in str(caught.value)
    assert "log start offset 100" in str(caught.value)
    assert caught.value.remote_range == (100, finished(t, "payments", 0)[-1].end_offset)
    ok = fetch_remote(
        t.store, t.rsm, FetchRequest("payments", 0, offset=100, max_bytes=1), index_cache=cache
    )
    assert ok.first_offset <= 100 < ok.next_offset


def test_unknown_offsets_and_bad_arguments(tiered: Tiered) -> None:
    with pytest.raises(OffsetOutOfRangeError):
        fetch_remote(tiered.store, tiered.rsm, FetchRequest("orders", 0, offset=-1))
    with pytest.raises(ValueError, match="exactly one"):
        fetch_remote(tiered.store, tiered.rsm, FetchRequest("orders", 0))
    with pytest.raises(ValueError, match="max_bytes"):
        fetch_remote(tiered.store, tiered.rsm, FetchRequest("orders", 0, offset=1, max_bytes=0))
