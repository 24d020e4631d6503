"""ChunkCache: byte budgets, LRU order, the disk tier, and prefetch stopping at the segment end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.transform.support import (
    CountingObjectStore,
    a_segment,
    record_batches,
    segment_files,
)
from tierflow.read.chunk_cache import ChunkCache
from tierflow.storage.chunked import ChunkedRemoteStorageManager
from tierflow.storage.local import LocalDirectoryObjectStore


class Loader:
    """Chunks of a fake segment: chunk i is ``size`` bytes of the letter i; records calls."""

    def __init__(self, size: int = 100) -> None:
        self.size = size
        self.calls: list[tuple[int, int]] = []

    def __call__(self, first: int, last: int) -> list[bytes]:
        self.calls.append((first, last))
        return [bytes([65 + i % 26]) * self.size for i in range(first, last + 1)]


def test_memory_budget_and_lru_eviction() -> None:
    cache = ChunkCache(memory_bytes=250)
    load = Loader()
    for chunk_id in (0, 1):
        cache.get("s", chunk_id, 10, load)
    cache.get("s", 0, 10, load)  # 0 is now the most recent
    cache.get("s", 2, 10, load)  # evicts 1, the least recently used
    assert cache.memory_used == 200 <= 250
    assert cache.contains("s", 0) and cache.contains("s", 2) and not cache.contains("s", 1)
    assert cache.stats.hits == 1 and cache.stats.misses == 3 and cache.stats.evictions == 1
    assert load.calls == [(0, 0), (1, 1), (2, 2)]


def test_chunk_larger_than_the_budget_is_returned_not_kept() -> None:
    cache = ChunkCache(memory_bytes=50)
    assert cache.get("s", 0, 1, Loader()) == b"A" * 100
    assert cache.memory_used == 0


def test_disk_tier_takes_evicted_chunks_within_its_budget(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "stale-1.chunk").write_bytes(b"old")  # from a previous process
    (tmp_path / "cache" / "keep.txt").write_text("not ours")
    cache = ChunkCache(memory_bytes=100, disk_dir=tmp_path / "cache", disk_bytes=250)
    assert not (tmp_path / "cache" / "stale-1.chunk").exists()
    assert (tmp_path / "cache" / "keep.txt").exists()
    load = Loader()
    for chunk_id in range(5):
        cache.get("seg.log", chunk_id, 5, load)
    # memory holds 4, disk holds 2 and 3 (1 was pushed out of the 250-byte disk budget)
    assert cache.memory_used == 100 and cache.disk_used == 200
    files = sorted(p.name for p in (tmp_path / "cache").glob("*.chunk"))
    assert files == ["seg.log-2.chunk", "seg.log-3.chunk"]
    assert cache.get("seg.log", 2, 5, load) == b"C" * 100  # from disk, promoted
    assert load.calls == [(i, i) for i in range(5)]
    assert cache.memory_used <= 100 and cache.disk_used <= 250
    cache.discard("seg.log")
    assert cache.memory_used == 0 and cache.disk_used == 0
    assert not list((tmp_path / "cache").glob("*.chunk"))


def test_prefetch_loads_following_chunks_in_one_call_and_stops_at_the_end() -> None:
    cache = ChunkCache(memory_bytes=10_000, prefetch_chunks=3)
    load = Loader()
    cache.get("s", 0, 6, load)
    assert load.calls == [(0, 3)]
    for chunk_id in (1, 2, 3):
        cache.get("s", chunk_id, 6, load)
    assert load.calls == [(0, 3)]  # all hits
    cache.get("s", 4, 6, load)
    assert load.calls == [(0, 3), (4, 5)]  # chunk 5 is the last one of the segment
    assert cache.stats.prefetched == 4
    assert not cache.contains("s", 6)


def test_prefetch_stops_at_a_cached_chunk() -> None:
    cache = ChunkCache(memory_bytes=10_000, prefetch_chunks=5)
    load = Loader()
    cache.get("s", 3, 10, load)
    assert load.calls == [(3, 8)]
    cache.get("s", 1, 10, load)
    assert load.calls[-1] == (1, 2)  # does not reload 3


def test_negative_budgets_are_refused() -> None:
    with pytest.raises(ValueError):
        ChunkCache(memory_bytes=-1)


def test_rsm_reads_through_the_cache_and_prefetch_never_crosses_segments(tmp_path: Path) -> None:
    chunk = 1000
    store = CountingObjectStore(LocalDirectoryObjectStore(tmp_path / "bucket"))
    cache = ChunkCache(memory_bytes=1 << 20, prefetch_chunks=4)
    rsm = ChunkedRemoteStorageManager(
        store, chunk_size=chunk, compression=True, compression_heuristic=False, cache=cache
    )
    first, second = a_segment(), a_segment(start=2000, end=2099)
    content = record_batches(5500)[:5500]  # 6 chunks
    rsm.copy_log_segment_data(first, segment_files(tmp_path / "a", content, with_txn=False))
    rsm.copy_log_segment_data(second, segment_files(tmp_path / "b", content, with_txn=False))
    log_key = rsm.object_keys(first)[0]
    store.reads.clear()

    assert rsm.fetch_log_segment(first, 3500, 3600) == content[3500:3601]
    index = rsm.manifest(first).chunk_index
    c3, c5 = index.chunk(3), index.chunk(5)
    log_reads = [r for r in store.reads if r[0].endswith(".log")]
    # One ranged read of chunks 3..5: prefetch wanted 4 more but the segment ends at chunk 5.
    assert log_reads == [
        (log_key, c3.transformed_position, c5.transformed_position + c5.transformed_size,
         c5.transformed_position + c5.transformed_size - c3.transformed_position)
    ]  # fmt: skip
    before = rsm.bytes_read
    assert rsm.fetch_log_segment(first, 4000, 5499) == content[4000:]
    assert rsm.bytes_read == before  # served from the cache
    assert not any(cache.contains(rsm.object_keys(second)[0].rsplit("/", 1)[-1], i)
                   for i in range(6))  # fmt: skip
    rsm.delete_log_segment_data(first)
    assert not cache.contains(log_key.rsplit("/", 1)[-1], 3)
