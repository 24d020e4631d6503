"""Leader-epoch-aware segment lookup: Kafka's epochForOffset, RLMM M6-M9 and the lineage check."""

from __future__ import annotations

from tests.retention.support import add_remote_segment
from tests.support.tiered import NOW_MS, Tiered
from tests.unit.read.conftest import finished, local_batches
from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.metadata import SegmentTransition, StartedSegment
from tierflow.metadata.epochs import epoch_for_offset, epochs_from_segments, lineage, within_lineage
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.read.fetch import FetchRequest, fetch_remote
from tierflow.read.index_cache.memory import RemoteIndexCache
from tierflow.read.metadata_cache import RemoteLogMetadataCache


def add_finished(t: Tiered, topic: str, partition: int, start: int, end: int, epochs) -> str:
    """A FINISHED segment in the store only (no objects): enough for metadata lookups."""
    return add_remote_segment(
        t, topic, partition, start, end, epochs, max_timestamp_ms=NOW_MS, size=1, owner="test"
    )


def view(t: Tiered, topic: str, partition: int) -> RemoteLogMetadataCache:
    return RemoteLogMetadataCache.load(t.store, t.store.topic(topic).topic_id, partition)


def test_epoch_for_offset_is_kafkas_floor_lookup() -> None:
    entries = [EpochEntry(0, 0), EpochEntry(2, 890), EpochEntry(3, 1192)]
    assert epoch_for_offset(entries, 0) == 0
    assert epoch_for_offset(entries, 889) == 0
    assert epoch_for_offset(entries, 890) == 2
    assert epoch_for_offset(entries, 10**9) == 3
    assert epoch_for_offset([EpochEntry(4, 100)], 99) is None
    assert epoch_for_offset([], 5) is None


def test_the_remote_segments_rebuild_the_brokers_leader_epoch_cache(tiered: Tiered) -> None:
    for log_ in tiered.logs():
        rebuilt = epochs_from_segments(finished(tiered, log_.topic, log_.partition))
        highest = finished(tiered, log_.topic, log_.partition)[-1].end_offset
        assert rebuilt == [e for e in log_.leader_epoch_entries() if e.start_offset <= highest]


def test_segments_spanning_several_epochs_serve_each_epoch(
    tiered: Tiered, cache: RemoteIndexCache
) -> None:
    spanning = 0
    for log_ in tiered.logs():
        rlmm = view(tiered, log_.topic, log_.partition)
        batches = local_batches(tiered, log_.topic, log_.partition)
        for seg in finished(tiered, log_.topic, log_.partition):
            pairs = seg.leader_epochs
            spanning += len(pairs) > 1
            for i, (epoch, start) in enumerate(pairs):
                end = pairs[i + 1][1] - 1 if i + 1 < len(pairs) else seg.end_offset
                assert rlmm.segment_for(epoch, start).segment_id == seg.segment_id
                assert rlmm.segment_for(epoch, end).segment_id == seg.segment_id
                if i + 1 < len(pairs):  # past the epoch's end within the segment: M7 says no
                    assert rlmm.segment_for(epoch, end + 1) is None
                result = fetch_remote(
                    tiered.store,
                    tiered.rsm,
                    FetchRequest(log_.topic, log_.partition, offset=start, max_bytes=1),
                    leader_epochs=log_.leader_epoch_entries(),
                    index_cache=cache,
                )
                first = next(b for b in batches if b.header.last_offset >= start)
                assert result.batches == [first.data]
                assert result.found[0].header.partition_leader_epoch == epoch
    assert spanning >= 4


def test_a_diverged_leaders_segment_is_never_served(
    fresh_tiered: Tiered, cache: RemoteIndexCache
) -> None:
    t = fresh_tiered
    real = finished(t, "orders", 0)[1]
    # A leader that lost an unclean election uploaded the same offsets under epoch 7.
    diverged = add_finished(t, "orders", 0, real.start_offset, real.end_offset, [(7, 589)])
    rlmm = view(t, "orders", 0)
    assert rlmm.segment_for(7, 700).segment_id == diverged
    assert rlmm.segment_for(0, 700).segment_id == real.segment_id
    epochs = t.log("orders", 0).leader_epoch_entries()
    result = fetch_remote(
        t.store,
        t.rsm,
        FetchRequest("orders", 0, offset=700, max_bytes=1),
        leader_epochs=epochs,
        index_cache=cache,
    )
    assert result.segments_read == [real.segment_id]
    lineage_map = lineage(epochs)
    log_end = t.log("orders", 0).log_end_offset()
    assert within_lineage(real, log_end, lineage_map)
    assert not within_lineage(t.store.segment(diverged), log_end, lineage_map)


def test_a_later_duplicate_supersedes_the_earlier_upload(fresh_tiered: Tiered) -> None:
    t = fresh_tiered
    first = finished(t, "payments", 0)[0]
    duplicate = add_finished(t, "payments", 0, first.start_offset, first.end_offset, [(0, 0)])
    rlmm = view(t, "payments", 0)
    assert rlmm.segment_for(0, 10).segment_id == duplicate
    assert not rlmm.is_referenced(first.segment_id)
    assert [s.segment_id for s in rlmm.list_segments(0)][:2] == [duplicate, first.segment_id]


def test_an_overlapping_wider_segment_wins_the_floor_lookup(fresh_tiered: Tiered) -> None:
    t = fresh_tiered
    topic_id = t.store.topic("orders").topic_id
    t.store.ensure_partition(
        topic_id, 5, log_start_offset=0, local_log_start_offset=0
    ) if False else None
    s0 = add_finished(t, "payments", 0, 2000, 2090, [(9, 2000)])
    s1 = add_finished(t, "payments", 0, 1995, 2100, [(9, 1995)])
    rlmm = view(t, "payments", 0)
    assert rlmm.segment_for(9, 2095).segment_id == s1
    assert rlmm.segment_for(9, 2050).segment_id == s1
    assert not rlmm.is_referenced(s0)


def test_highest_offset_for_epoch_does_not_drop_when_segments_are_deleted(
    fresh_tiered: Tiered,
) -> None:
    t = fresh_tiered
    last = finished(t, "orders", 1)[-1]
    before = view(t, "orders", 1)
    assert before.highest_offset_for_epoch(3) == last.end_offset
    t.store.transition_segment(
        SegmentTransition(last.segment_id, S.DELETE_SEGMENT_STARTED), actor="t", now_ms=NOW_MS
    )
    after = view(t, "orders", 1)
    assert after.highest_offset_for_epoch(3) == last.end_offset
    assert after.segment_for(3, last.end_offset) is None
    assert last.segment_id in [s.segment_id for s in after.list_segments(3)]
    t.store.transition_segment(
        SegmentTransition(last.segment_id, S.DELETE_SEGMENT_FINISHED), actor="t", now_ms=NOW_MS
    )
    gone = view(t, "orders", 1)
    assert last.segment_id not in [s.segment_id for s in gone.list_segments()]
    assert gone.highest_offset_for_epoch(3) == last.end_offset


def test_copy_started_segments_are_listed_but_never_read(fresh_tiered: Tiered) -> None:
    t = fresh_tiered
    topic_id = t.store.topic("payments").topic_id
    t.store.add_segment(
        StartedSegment(
            segment_id="in-flight",
            topic_id=topic_id,
            partition=0,
            start_offset=1471,
            end_offset=1500,
            max_timestamp_ms=NOW_MS,
            segment_leader_epochs=[(5, 1471), (6, 1487)],
            segment_size_bytes=1,
            txn_index_empty=True,
        ),
        actor="test",
        now_ms=NOW_MS,
    )
    rlmm = view(t, "payments", 0)
    assert rlmm.segment_for(6, 1490) is None
    assert "in-flight" in [s.segment_id for s in rlmm.list_segments(6)]
