"""The in-process RemoteIndexCache: keyed by segment id, loaded per index type, bounded."""

from __future__ import annotations

import pytest

from tests.support.tiered import Tiered
from tests.unit.read.conftest import finished
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.read.index_cache.memory import RemoteIndexCache
from tierflow.read.remote_reads import RemoteReads
from tierflow.rsm import IndexType
from tierflow.segment_refs import remote_segment


def refs(t: Tiered):
    topic = t.store.topic("orders")
    return [remote_segment(topic, seg) for seg in finished(t, "orders", 0)]


def test_lookups_match_the_local_index_and_hit_the_cache(tiered: Tiered) -> None:
    cache = RemoteIndexCache()
    reads = RemoteReads(tiered.rsm)
    for ref, local in zip(refs(tiered), tiered.log("orders", 0).segments(), strict=False):
        index = OffsetIndex.read(local.index_path, local.base_offset)
        for offset in range(ref.start_offset, ref.end_offset + 1, 37):
            assert cache.lookup_offset(reads, ref, offset) == index.lookup(offset).position
    downloaded = reads.bytes_read
    assert cache.stats.misses == 3
    for ref in refs(tiered):
        cache.lookup_offset(reads, ref, ref.start_offset + 5)
    assert reads.bytes_read == downloaded, "warm lookups download nothing"


def test_offset_lookups_do_not_download_the_time_index(tiered: Tiered) -> None:
    cache = RemoteIndexCache()
    reads = RemoteReads(tiered.rsm)
    ref = refs(tiered)[0]
    cache.lookup_offset(reads, ref, ref.start_offset + 100)
    assert reads.bytes_read == len(tiered.rsm.fetch_index(ref, IndexType.OFFSET))


def test_the_cache_is_bounded_by_index_bytes(tiered: Tiered) -> None:
    all_refs = refs(tiered)
    sizes = [len(tiered.rsm.fetch_index(ref, IndexType.OFFSET)) for ref in all_refs]
    cache = RemoteIndexCache(max_bytes=sizes[0] + sizes[1])
    reads = RemoteReads(tiered.rsm)
    for ref in all_refs:
        cache.lookup_offset(reads, ref, ref.start_offset)
    assert all_refs[0].segment_id not in cache  # least recently used went first
    assert all_refs[2].segment_id in cache
    assert cache.size_bytes <= cache.max_bytes
    assert cache.stats.evictions == 1


def test_a_cache_needs_a_positive_size() -> None:
    with pytest.raises(ValueError):
        RemoteIndexCache(max_bytes=0)
