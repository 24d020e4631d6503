"""warm_index_cache: the DAG task that fetches the newest indexes and prunes dead entries."""

from __future__ import annotations

import os
import time

from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tests.unit.read.index_cache.conftest import refs
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.read.index_cache import RemoteIndexCache
from tierflow.tasks.index_cache import warm_index_cache


def _finished(t: Tiered, topic: str, partition: int):
    topic_id = t.store.topic(topic).topic_id
    return t.store.segments(
        topic_id, partition, states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
    )


def test_warms_the_newest_segments_of_each_partition(fresh_tiered: Tiered) -> None:
    t = fresh_tiered
    cache = RemoteIndexCache(t.settings.data_dir)
    report = warm_index_cache(t.settings, newest_per_partition=1, cache=cache)
    newest = {
        _finished(t, log_.topic, log_.partition)[-1].segment_id
        for log_ in t.logs()
        if _finished(t, log_.topic, log_.partition)
    }
    assert set(cache.segment_ids()) == newest
    assert report["warmed"] == len(newest) == report["entries"] == report["loads"]
    assert report["partitions"] == 3
    assert report["finished_segments"] == len(refs(t))
    assert report["cache_bytes"] == cache.disk_bytes() > 0
    assert report["remote_bytes_read"] > 0

    again = warm_index_cache(
        t.settings, newest_per_partition=1, cache=RemoteIndexCache(t.settings.data_dir)
    )
    assert again["warmed"] == 0 and again["already_cached"] == len(newest)
    assert again["remote_bytes_read"] == 0, "the files are reused across processes"


def test_uses_the_default_cache_under_the_data_dir(fresh_tiered: Tiered) -> None:
    t = fresh_tiered
    report = warm_index_cache(t.settings, newest_per_partition=2)
    directory = t.settings.data_dir / "remote-log-index-cache"
    assert len(list(directory.glob("*.index"))) == report["entries"] == 6


def test_prunes_segments_no_longer_finished_and_checks_recent_reads(
    fresh_tiered: Tiered,
) -> None:
    t = fresh_tiered
    cache = RemoteIndexCache(t.settings.data_dir)
    for ref in refs(t):
        cache.get(t.rsm, ref)
    orders = t.store.topic("orders")
    deleted = _finished(t, "orders", 0)[0]
    delete_remote_segment(t.store, t.rsm, orders, deleted, actor="test", now_ms=NOW_MS)
    # An old read (by mtime, as another process would leave it) and a recent one.
    old = _finished(t, "orders", 1)[0]
    old_index = next(cache.directory.glob(f"*_{old.segment_id}.index"))
    long_ago = time.time() - 7200
    os.utime(old_index, (long_ago, long_ago))

    fresh = RemoteIndexCache(t.settings.data_dir)
    report = warm_index_cache(t.settings, newest_per_partition=0, recently_read_s=3600, cache=fresh)

    assert report["pruned"] == 1
    assert deleted.segment_id not in fresh
    assert not list(fresh.directory.glob(f"*_{deleted.segment_id}.*"))
    assert report["recently_read_checked"] == len(refs(t)) - 1, "all but the old one"
    assert report["loads"] == len(refs(t)) - 1 and report["remote_bytes_read"] == 0
    assert old.segment_id in fresh, "old entries stay until the budget needs the room"


def test_segments_tiered_later_are_warmed_on_the_next_run(tmp_path) -> None:
    t = build_tiered(tmp_path)
    cache = RemoteIndexCache(t.settings.data_dir)
    copy_partition(t.log("orders", 0), t.store, t.rsm, owner="test")
    first = warm_index_cache(t.settings, newest_per_partition=1, cache=cache)
    assert first["warmed"] == 1
    for key in (("orders", 1), ("payments", 0)):
        copy_partition(t.log(*key), t.store, t.rsm, owner="test")
    second = warm_index_cache(t.settings, newest_per_partition=1, cache=cache)
    assert (second["warmed"], second["already_cached"], second["pruned"]) == (2, 1, 0)
    assert set(cache.segment_ids()) == {
        _finished(t, topic, p)[-1].segment_id
        for topic, p in (("orders", 0), ("orders", 1), ("payments", 0))
    }
