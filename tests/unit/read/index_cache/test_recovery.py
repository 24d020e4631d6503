"""Startup (I5), corrupt files (I4) and removal (I6): the cache repairs itself from remote."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.support.tiered import Tiered
from tests.unit.read.index_cache.conftest import FailingIndexes, refs
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.read.index_cache import DIR_NAME, RemoteIndexCache
from tierflow.read.remote_reads import RemoteReads
from tierflow.rsm import IndexType

LONG_AGO = time.time() - 3600


def _local_index(t: Tiered, ref) -> OffsetIndex:
    local = next(
        s for s in t.log(ref.topic, ref.partition).segments() if s.base_offset == ref.start_offset
    )
    return OffsetIndex.read(local.index_path, local.base_offset)


def _filled(t: Tiered, base: Path) -> RemoteIndexCache:
    cache = RemoteIndexCache(base)
    for ref in refs(t):
        cache.get(t.rsm, ref)
    return cache


def test_a_truncated_index_is_detected_and_fetched_again(tiered: Tiered, tmp_path: Path) -> None:
    cache = _filled(tiered, tmp_path)
    ref = refs(tiered, "orders")[1]
    index_file = cache.directory / f"{ref.start_offset}_{ref.segment_id}.index"
    good = index_file.read_bytes()
    offset = ref.end_offset - 3
    want = _local_index(tiered, ref).lookup(offset).position
    assert want > 0
    with open(index_file, "r+b") as f:
        f.truncate(len(good) - 5)  # cut inside the last entry

    failing = FailingIndexes(tiered.rsm)
    assert cache.lookup_offset(failing, ref, offset) == want
    assert failing.index_fetches == [(ref.segment_id, IndexType.OFFSET)], "only the bad file"
    assert index_file.read_bytes() == good
    assert cache.stats.refetched_corrupt == 1


def test_a_corrupt_file_found_after_a_restart_is_fetched_again(
    tiered: Tiered, tmp_path: Path
) -> None:
    _filled(tiered, tmp_path)
    ref = refs(tiered, "orders")[0]
    directory = tmp_path / DIR_NAME
    time_file = directory / f"{ref.start_offset}_{ref.segment_id}.timeindex"
    good = time_file.read_bytes()
    # The classic crash corruption: a zeroed timestamp after real entries goes backwards.
    time_file.write_bytes(good[:12] + b"\x00" * 8 + good[20:])
    txn_file = directory / f"{ref.start_offset}_{ref.segment_id}.txnindex"
    txn_file.write_bytes(txn_file.read_bytes()[:-1])

    restarted = RemoteIndexCache(tmp_path)  # Kafka would throw here; tierflow repairs on use
    failing = FailingIndexes(tiered.rsm)
    entry = restarted.get(failing, ref)
    assert sorted(t for _, t in failing.index_fetches) == [
        IndexType.TIMESTAMP,
        IndexType.TRANSACTION,
    ]
    assert time_file.read_bytes() == good
    assert entry.offset_index == _local_index(tiered, ref)
    assert restarted.stats.refetched_corrupt == 2


def test_a_file_removed_by_another_process_is_fetched_again(tiered: Tiered, tmp_path: Path) -> None:
    cache = _filled(tiered, tmp_path)
    other = RemoteIndexCache(tmp_path)
    ref = refs(tiered)[0]
    assert other.remove([ref.segment_id]) == 1
    reads = RemoteReads(tiered.rsm)
    cache.lookup_offset(reads, ref, ref.end_offset)
    assert reads.bytes_read > 0
    assert ref.segment_id in cache
    assert len(list(cache.directory.glob(f"*_{ref.segment_id}.*"))) == 3


def test_startup_removes_leftovers_but_not_writes_in_flight(tiered: Tiered, tmp_path: Path) -> None:
    _filled(tiered, tmp_path)
    directory = tmp_path / DIR_NAME
    complete, partial = refs(tiered)[:2]
    old_tmp = directory / f"{complete.start_offset}_{complete.segment_id}.index.123-abc.tmp"
    new_tmp = directory / f"{complete.start_offset}_{complete.segment_id}.timeindex.456-def.tmp"
    deleted = directory / f"{complete.start_offset}_{complete.segment_id}.txnindex.deleted"
    for path in (old_tmp, new_tmp, deleted):
        path.write_bytes(b"leftover")
    os.utime(old_tmp, (LONG_AGO, LONG_AGO))
    os.utime(deleted, (LONG_AGO, LONG_AGO))
    partial_prefix = directory / f"{partial.start_offset}_{partial.segment_id}"
    Path(f"{partial_prefix}.timeindex").unlink()
    for suffix in (".index", ".txnindex"):
        os.utime(f"{partial_prefix}{suffix}", (LONG_AGO, LONG_AGO))

    cache = RemoteIndexCache(tmp_path)

    assert not old_tmp.exists() and not deleted.exists()
    assert new_tmp.exists(), "a young .tmp may be another process writing"
    assert not list(directory.glob(f"*_{partial.segment_id}.*")), "partial set removed"
    assert partial.segment_id not in cache
    assert complete.segment_id in cache
    assert cache.size_bytes == cache.disk_bytes()


def test_remove_and_prune_drop_entries_of_deleted_segments(tiered: Tiered, tmp_path: Path) -> None:
    cache = _filled(tiered, tmp_path)
    all_refs = refs(tiered)
    gone, *kept = all_refs
    assert cache.remove([gone.segment_id, "no-such-segment"]) == 1
    assert gone.segment_id not in cache
    assert not list(cache.directory.glob(f"*_{gone.segment_id}.*"))

    live = {ref.segment_id for ref in kept[: len(kept) // 2]}
    assert cache.prune(live) == len(kept) - len(live)
    assert set(cache.segment_ids()) == live
    on_disk = {p.name.split("_", 1)[1].rsplit(".", 1)[0] for p in cache.directory.iterdir()}
    assert on_disk == live
    assert not list(cache.directory.glob("*.deleted"))
