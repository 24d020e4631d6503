"""The remote compaction of a compacted topic's tiered segments (issue 21, part 2).

A generated changelog (a few hundred keys, one record in ten a tombstone, transactional
producers among others, some transactions aborted) is tiered uncleaned, so the remote tier
holds every update; the broker's local retention then moved the local log start past it. The
compaction must leave the read_committed view's key -> latest map as it was (minus tombstones
older than delete.retention.ms), every staying record at its offset and byte-identical, and
each key once.
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch

from tests.support.compaction_data import (
    CHANGELOG,
    DAY_MS,
    cleaned_end,
    expected_after,
    finished_changelog_rows,
    tier_uncleaned,
)
from tests.support.remote_view import committed_view, read_remote
from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.record_batch import iter_batches
from tierflow.lifecycle.compaction.report import CompactionOptions
from tierflow.lifecycle.compaction.swap import compact_partition
from tierflow.read.fetch import FetchRequest, fetch_remote
from tierflow.restore.request import restore_partition


def compact(t: Tiered, now_ms: int = NOW_MS + 60_000, **options: object):
    topic_id = t.store.topic("changelog").topic_id
    opts = CompactionOptions(now_ms=now_ms, **options)
    return compact_partition(t.store, t.rsm, topic_id, 0, opts, owner="test")


@pytest.fixture
def t(tmp_path: Path) -> Tiered:
    return build_tiered(
        tmp_path,
        topics=(CHANGELOG,),
        topic_configs={"changelog": {"cleanup_policy": "compact", "segment_bytes": 1 << 20}},
    )


def test_compaction_keeps_every_keys_latest_record_byte_for_byte(t: Tiered) -> None:
    tier_uncleaned(t)
    before = read_remote(t.store, t.rsm, "changelog")
    assert before.aborted > 0 and len(before.records) > len(before.latest()), "a real workload"
    source_bytes = sum(s.segment_size_bytes for s in finished_changelog_rows(t))
    report = compact(t)
    after = read_remote(t.store, t.rsm, "changelog")
    assert after.latest() == before.latest(), "tombstones are younger than delete.retention.ms"
    in_range = [r.key for r in after.records if r.offset <= cleaned_end(t)]
    assert len(in_range) == len(set(in_range)) > 200, "each key once in the compacted range"
    by_offset = {r.offset: r for r in before.records}
    assert all(by_offset[r.offset] == r for r in after.records), "offsets, bytes, timestamps"
    end = cleaned_end(t)
    assert [m for m in after.markers if m[0] <= end and m[1] == 0] == [], "ABORT markers go"
    assert [m for m in after.markers if m[0] <= end] == [
        m for m in before.markers if m[0] <= end and m[1] == 1
    ], "COMMIT markers stay"
    rows = finished_changelog_rows(t)
    assert sum(r.segment_size_bytes for r in rows) < source_bytes
    assert report.reclaimed_bytes == source_bytes - sum(r.segment_size_bytes for r in rows)
    assert all(r.segment_size_bytes <= 1 << 20 for r in rows)


def test_tombstones_older_than_delete_retention_go(t: Tiered) -> None:
    tier_uncleaned(t)
    before = read_remote(t.store, t.rsm, "changelog")
    now = NOW_MS + 2 * DAY_MS
    compact(t, now_ms=now)
    after = read_remote(t.store, t.rsm, "changelog")
    end = cleaned_end(t)
    assert after.latest() == expected_after(before, now - DAY_MS, end)
    in_range = [r for r in after.records if r.offset <= end]
    assert in_range and all(r.value is not None for r in in_range), "every tombstone expired"
    assert any(r.value is None and r.offset <= end for r in before.latest().values())


def test_a_second_run_finds_the_partition_clean(t: Tiered) -> None:
    tier_uncleaned(t)
    compact(t)
    rows = [(r.segment_id, r.start_offset, r.end_offset) for r in finished_changelog_rows(t)]
    report = compact(t)
    assert report.skipped and report.skipped.startswith("the dirty segments wait for the marker"), (
        report
    )
    forced = compact(t, force=True)
    assert forced.unchanged == 1 and forced.written == [], "one group, already compact"
    assert [
        (r.segment_id, r.start_offset, r.end_offset) for r in finished_changelog_rows(t)
    ] == rows


def test_young_segments_wait_for_min_compaction_lag(t: Tiered) -> None:
    tier_uncleaned(t)
    topic_id = t.store.topic("changelog").topic_id
    lag = 30 * DAY_MS  # the generated records are at most a few days old
    t.store.register_topic("changelog", topic_id, actor="t", now_ms=1, min_compaction_lag_ms=lag)
    report = compact(t)
    assert report.skipped.startswith("no segment is cleanable"), report
    assert compact(t, now_ms=NOW_MS + lag).written


def test_the_head_still_on_the_broker_is_not_compacted(tmp_path: Path) -> None:
    t = build_tiered(
        tmp_path, topics=(CHANGELOG,), topic_configs={"changelog": {"cleanup_policy": "compact"}}
    )
    bases = [s.base_offset for s in t.log("changelog", 0).segments()]
    tier_uncleaned(t, local_start=bases[3])
    segments = [(r.start_offset, r.end_offset) for r in finished_changelog_rows(t)]
    compact(t)
    after = [(r.start_offset, r.end_offset) for r in finished_changelog_rows(t)]
    assert after[0] == (bases[0], bases[3] - 1), "one group: 1 GiB of segment.bytes"
    assert after[1:] == segments[3:], "untouched from the local log start on"


def test_a_partition_waiting_for_a_marker_reads_no_segment(t: Tiered) -> None:
    tier_uncleaned(t)
    compact(t)
    reads = []
    original = t.rsm.iter_log_segment
    t.rsm.iter_log_segment = lambda segment: reads.append(segment) or original(segment)
    assert compact(t).skipped.startswith("the dirty segments wait for the marker")
    assert reads == []


def test_compacted_segments_restore_and_fetch_as_any_segment(t: Tiered, tmp_path: Path) -> None:
    """The restore writes the compacted segments back as broker files, records exactly the
    remote tier's; each offset index entry names a batch start holding its offset; a fetch at
    an offset the compaction removed returns the next one, as Kafka does."""
    tier_uncleaned(t)
    compact(t)
    target = tmp_path / "restored"
    restore_partition(t.store, t.rsm, topic="changelog", partition=0, log_dir=target)
    rows = finished_changelog_rows(t)
    logs = sorted((target / "changelog-0").glob("*.log"))
    assert [int(p.stem) for p in logs] == [r.start_offset for r in rows]
    fetched = []
    for log_path in logs:
        data = log_path.read_bytes()
        starts = {h.position: h for h in iter_batches(log_path)}
        index = OffsetIndex.read(log_path.with_suffix(".index"), int(log_path.stem))
        assert all(starts[e.position].last_offset == e.offset for e in index.entries)
        fetched += [(h.base_offset, data[h.position : h.end_position]) for h in starts.values()]
    view = read_remote(t.store, t.rsm, "changelog")
    assert committed_view(fetched).records == view.records
    offsets = sorted(r.offset for _, raw in fetched for r in DefaultRecordBatch(raw))
    gap = next(o + 1 for o, after in pairwise(offsets) if after > o + 1)
    result = fetch_remote(t.store, t.rsm, FetchRequest("changelog", 0, offset=gap, max_bytes=1))
    returned = [r.offset for raw in result.batches for r in DefaultRecordBatch(raw)]
    assert min(o for o in returned if o >= gap) == min(o for o in offsets if o > gap), (
        "the next offset there is"
    )
