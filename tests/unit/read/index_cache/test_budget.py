"""The byte budget (I2): under a read load the files never exceed it; least recently used
entries go first; several threads and several cache instances share one directory."""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from tests.support.tiered import Tiered
from tests.unit.read.index_cache.conftest import refs
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.read.index_cache import RemoteIndexCache
from tierflow.rsm import IndexType


def _files_bytes(directory: Path) -> int:
    """Every file in the directory, leftovers and temporaries included."""
    return sum(p.stat().st_size for p in directory.iterdir())


def _entry_sizes(t: Tiered) -> dict[str, int]:
    sizes = {}
    for ref in refs(t):
        total = 0
        for index_type in (IndexType.OFFSET, IndexType.TIMESTAMP):
            total += len(t.rsm.fetch_index(ref, index_type))
        sizes[ref.segment_id] = total  # the generated clicks topic has no transactions
    return sizes


def _local_indexes(t: Tiered) -> dict[str, OffsetIndex]:
    found = {}
    for ref in refs(t):
        local = next(
            s
            for s in t.log(ref.topic, ref.partition).segments()
            if s.base_offset == ref.start_offset
        )
        found[ref.segment_id] = OffsetIndex.read(local.index_path, local.base_offset)
    return found


def test_random_reads_stay_within_the_budget(many: Tiered, tmp_path: Path) -> None:
    all_refs = refs(many)
    assert len(all_refs) == 30
    sizes = _entry_sizes(many)
    budget = sum(sorted(sizes.values())[:7])  # room for about a quarter of the segments
    cache = RemoteIndexCache(tmp_path, budget)
    local = _local_indexes(many)
    rng = random.Random(405)
    for _ in range(600):
        ref = rng.choice(all_refs)
        offset = rng.randint(ref.start_offset, ref.end_offset)
        position = cache.lookup_offset(many.rsm, ref, offset)
        assert position == local[ref.segment_id].lookup(offset).position
        assert _files_bytes(cache.directory) <= budget
        assert cache.size_bytes <= budget
    assert cache.stats.evictions > 0 and cache.stats.hits > 0
    assert cache.size_bytes == cache.disk_bytes()


def test_least_recently_used_goes_first(many: Tiered, tmp_path: Path) -> None:
    a, b, c, d = refs(many)[:4]
    sizes = _entry_sizes(many)
    cache = RemoteIndexCache(
        tmp_path, sizes[a.segment_id] + sizes[b.segment_id] + sizes[c.segment_id]
    )
    for ref in (a, b, c):
        cache.get(many.rsm, ref)
    cache.get(many.rsm, a)  # a is now more recent than b
    if sizes[d.segment_id] > sizes[b.segment_id]:
        pytest.skip("the generated sizes need d to fit where b was")
    cache.get(many.rsm, d)
    assert b.segment_id not in cache
    assert {a.segment_id, c.segment_id, d.segment_id} <= set(cache.segment_ids())


def test_an_entry_larger_than_the_budget_is_served_but_not_kept(
    many: Tiered, tmp_path: Path
) -> None:
    ref = refs(many)[0]
    cache = RemoteIndexCache(tmp_path, 16)
    local = _local_indexes(many)[ref.segment_id]
    assert (
        cache.lookup_offset(many.rsm, ref, ref.end_offset) == local.lookup(ref.end_offset).position
    )
    assert list(cache.directory.iterdir()) == []


def test_a_smaller_budget_at_restart_evicts_at_once(many: Tiered, tmp_path: Path) -> None:
    cache = RemoteIndexCache(tmp_path)
    for ref in refs(many):
        cache.get(many.rsm, ref)
    budget = cache.size_bytes // 3
    restarted = RemoteIndexCache(tmp_path, budget)
    assert 0 < restarted.size_bytes <= budget
    assert _files_bytes(restarted.directory) <= budget


def test_two_caches_on_one_directory_share_the_budget(many: Tiered, tmp_path: Path) -> None:
    all_refs = refs(many)
    sizes = _entry_sizes(many)
    budget = sum(sorted(sizes.values())[:6])
    first, second = RemoteIndexCache(tmp_path, budget), RemoteIndexCache(tmp_path, budget)
    rng = random.Random(950)
    for step in range(200):
        cache = first if step % 2 else second
        ref = rng.choice(all_refs)
        cache.lookup_offset(many.rsm, ref, rng.randint(ref.start_offset, ref.end_offset))
        assert _files_bytes(cache.directory) <= budget


def test_threads_share_one_cache_and_load_each_segment_once(many: Tiered, tmp_path: Path) -> None:
    all_refs = refs(many)
    local = _local_indexes(many)
    cache = RemoteIndexCache(tmp_path)
    errors: list[BaseException] = []

    def reader(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for _ in range(100):
                ref = rng.choice(all_refs)
                offset = rng.randint(ref.start_offset, ref.end_offset)
                got = cache.lookup_offset(many.rsm, ref, offset)
                assert got == local[ref.segment_id].lookup(offset).position
        except BaseException as exc:  # reported below, with the thread's failure
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert cache.stats.misses == len(all_refs), "one load per segment, whatever the races"
    assert not list(cache.directory.glob("*.tmp"))


def test_the_in_memory_working_set_is_bounded_and_reloads_from_disk(
    many: Tiered, tmp_path: Path
) -> None:
    from tierflow.read.remote_reads import RemoteReads

    all_refs = refs(many)[:10]
    cache = RemoteIndexCache(tmp_path, memory_bytes=1)
    for ref in all_refs:
        cache.get(many.rsm, ref)
    reads = RemoteReads(many.rsm)
    local = _local_indexes(many)
    for ref in all_refs:
        offset = ref.end_offset - 1
        assert (
            cache.lookup_offset(reads, ref, offset) == local[ref.segment_id].lookup(offset).position
        )
    assert reads.bytes_read == 0, "reloaded from the files, not from remote storage"
    assert len(cache) == 10
