"""Kafka's on-disk layout (I3), lookups (I7) and load on miss (I4)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.tiered import Tiered
from tests.unit.read.index_cache.conftest import FailingIndexes, refs
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.time_index import TimeIndex
from tierflow.kafka.txn_index import read_txn_index
from tierflow.read.index_cache import DIR_NAME, IndexCacheError, RemoteIndexCache, parse_file_name
from tierflow.read.remote_reads import RemoteReads
from tierflow.rsm import IndexType, RemoteResourceNotFoundError


def test_files_are_named_start_offset_underscore_segment_id(tiered: Tiered, tmp_path: Path) -> None:
    cache = RemoteIndexCache(tmp_path)
    for ref in refs(tiered):
        cache.get(tiered.rsm, ref)
    directory = tmp_path / DIR_NAME
    assert cache.directory == directory
    expected = {
        f"{ref.start_offset}_{ref.segment_id}{suffix}"
        for ref in refs(tiered)
        for suffix in (".index", ".timeindex", ".txnindex")
    }
    assert {p.name for p in directory.iterdir()} == expected
    assert "589_" in " ".join(expected), "decimal start offset, not zero-padded"
    assert not any(re.match(r"0\d", name) for name in expected)
    assert parse_file_name(f"589_{refs(tiered)[0].segment_id}.timeindex") == (
        589,
        refs(tiered)[0].segment_id,
        ".timeindex",
    )


def test_files_hold_the_segment_indexes_byte_for_byte(tiered: Tiered, tmp_path: Path) -> None:
    cache = RemoteIndexCache(tmp_path)
    for ref in refs(tiered, "orders"):
        cache.get(tiered.rsm, ref)
        local = next(
            s
            for s in tiered.log(ref.topic, ref.partition).segments()
            if s.base_offset == ref.start_offset
        )
        prefix = cache.directory / f"{ref.start_offset}_{ref.segment_id}"
        assert Path(f"{prefix}.index").read_bytes() == local.index_path.read_bytes()
        assert Path(f"{prefix}.timeindex").read_bytes() == local.time_index_path.read_bytes()
        txn = local.txn_index_path.read_bytes() if local.has_txn_index() else b""
        assert Path(f"{prefix}.txnindex").read_bytes() == txn


def test_lookups_match_kafka_on_the_local_indexes(tiered: Tiered, tmp_path: Path) -> None:
    cache = RemoteIndexCache(tmp_path)
    for ref in refs(tiered):
        local = next(
            s
            for s in tiered.log(ref.topic, ref.partition).segments()
            if s.base_offset == ref.start_offset
        )
        offsets = OffsetIndex.read(local.index_path, local.base_offset)
        times = TimeIndex.read(local.time_index_path, local.base_offset)
        entry = cache.get(tiered.rsm, ref)
        assert entry.offset_index.entries == offsets.entries
        for offset in range(ref.start_offset - 1, ref.end_offset + 2, 17):
            assert cache.lookup_offset(tiered.rsm, ref, offset) == offsets.lookup(offset).position
        stamps = [e.timestamp for e in times.entries]
        for ts in [stamps[0] - 1, *stamps, stamps[-1] + 1]:
            for start in (ref.start_offset, (ref.start_offset + ref.end_offset) // 2):
                want = offsets.lookup(max(start, times.lookup(ts).offset)).position
                assert cache.lookup_timestamp(tiered.rsm, ref, ts, start) == want


def test_a_missing_remote_txn_index_becomes_an_empty_file(tiered: Tiered, tmp_path: Path) -> None:
    ref = refs(tiered, "payments")[0]
    with pytest.raises(RemoteResourceNotFoundError):
        tiered.rsm.fetch_index(ref, IndexType.TRANSACTION)
    entry = RemoteIndexCache(tmp_path).get(tiered.rsm, ref)
    txn = tmp_path / DIR_NAME / f"{ref.start_offset}_{ref.segment_id}.txnindex"
    assert txn.is_file() and txn.stat().st_size == 0
    assert entry.txn_entries == []


def test_txn_entries_are_the_aborted_transactions(tiered: Tiered, tmp_path: Path) -> None:
    cache = RemoteIndexCache(tmp_path)
    with_aborts = 0
    for ref in refs(tiered, "orders"):
        local = next(
            s
            for s in tiered.log(ref.topic, ref.partition).segments()
            if s.base_offset == ref.start_offset
        )
        want = read_txn_index(local.txn_index_path) if local.has_txn_index() else []
        assert cache.get(tiered.rsm, ref).txn_entries == want
        with_aborts += bool(want)
    assert with_aborts, "the generated orders topic has aborted transactions"


def test_a_second_lookup_reads_nothing_remote(tiered: Tiered, tmp_path: Path) -> None:
    cache = RemoteIndexCache(tmp_path)
    reads = RemoteReads(tiered.rsm)
    ref = refs(tiered)[0]
    cache.lookup_offset(reads, ref, ref.start_offset + 100)
    first = reads.bytes_read
    assert first > 0
    cache.lookup_offset(reads, ref, ref.start_offset + 200)
    cache.lookup_timestamp(reads, ref, 0, ref.start_offset)
    assert reads.bytes_read == first
    assert (cache.stats.hits, cache.stats.misses) == (2, 1)


def test_a_restarted_cache_uses_the_files_without_remote_reads(
    tiered: Tiered, tmp_path: Path
) -> None:
    first = RemoteIndexCache(tmp_path)
    for ref in refs(tiered):
        first.get(tiered.rsm, ref)
    restarted = RemoteIndexCache(tmp_path)
    assert set(restarted.segment_ids()) == {ref.segment_id for ref in refs(tiered)}
    assert restarted.size_bytes == first.size_bytes
    reads = RemoteReads(tiered.rsm)
    for ref in refs(tiered):
        assert restarted.get(reads, ref).offset_index == first.get(tiered.rsm, ref).offset_index
    assert reads.bytes_read == 0


def test_writes_leave_no_tmp_files_and_a_failed_load_leaves_nothing(
    tiered: Tiered, tmp_path: Path
) -> None:
    ref = refs(tiered, "orders")[0]
    failing = FailingIndexes(tiered.rsm, fail={IndexType.TRANSACTION})
    cache = RemoteIndexCache(tmp_path)
    with pytest.raises(OSError, match="TRANSACTION"):
        cache.get(failing, ref)
    assert list(cache.directory.iterdir()) == [], "no .tmp, no partial entry"
    assert ref.segment_id not in cache
    assert cache.stats.load_failures == 1
    cache.get(tiered.rsm, ref)
    assert sorted(p.suffix for p in cache.directory.iterdir()) == [
        ".index",
        ".timeindex",
        ".txnindex",
    ]


def test_a_corrupt_remote_index_is_an_error_naming_the_segment(
    tiered: Tiered, tmp_path: Path
) -> None:
    ref = refs(tiered, "orders")[0]
    cache = RemoteIndexCache(tmp_path)
    with pytest.raises(IndexCacheError, match=ref.segment_id) as raised:
        cache.get(FailingIndexes(tiered.rsm, cut={IndexType.OFFSET}), ref)
    assert "OFFSET" in str(raised.value) and "multiple" in str(raised.value)
    assert list(cache.directory.iterdir()) == []


def test_the_read_path_gives_the_same_batches_with_either_cache(
    tiered: Tiered, tmp_path: Path
) -> None:
    from tierflow.read.fetch import FetchRequest, fetch_remote
    from tierflow.read.index_cache.memory import RemoteIndexCache as InMemoryIndexCache

    disk = RemoteIndexCache(tmp_path)
    for ref in refs(tiered):
        for offset in (ref.start_offset, (ref.start_offset + ref.end_offset) // 2, ref.end_offset):
            request = FetchRequest(ref.topic, ref.partition, offset=offset, max_bytes=1)
            on_disk = fetch_remote(tiered.store, tiered.rsm, request, index_cache=disk)
            in_memory = fetch_remote(
                tiered.store, tiered.rsm, request, index_cache=InMemoryIndexCache()
            )
            assert on_disk.batches == in_memory.batches and on_disk.batches
            assert on_disk.found[0].header.base_offset <= offset <= on_disk.next_offset - 1
    assert len(disk) == len(refs(tiered))
    by_time = fetch_remote(
        tiered.store,
        tiered.rsm,
        FetchRequest("orders", 0, timestamp=0, max_bytes=1),
        index_cache=disk,
    )
    assert by_time.timestamp_match is not None and by_time.batches
