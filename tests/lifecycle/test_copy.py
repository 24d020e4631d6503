"""Segment copy of one partition against a generated broker log dir, a SQLite store and a
local bucket: eligibility, verification, resumption and bad input."""

from __future__ import annotations

import pytest

from tests.corpus.state import recorded_keys
from tests.support.tiered import NOW_MS, Tiered, eligible
from tierflow.ids import new_kafka_uuid
from tierflow.kafka.checkpoint import REPLICATION_OFFSET_CHECKPOINT, write_offset_checkpoint
from tierflow.kafka.errors import KafkaFormatError, MissingFileError
from tierflow.kafka.last_stable_offset import last_stable_offset
from tierflow.lifecycle.copy.lease import PartitionBusyError
from tierflow.lifecycle.copy.plan import TopicIdMismatchError
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata import StartedSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.segment_refs import remote_segment

FINISHED = [S.COPY_SEGMENT_FINISHED]


def copy(t: Tiered, topic: str, partition: int, owner: str = "test", **kw):
    return copy_partition(t.log(topic, partition), t.store, t.rsm, owner=owner, **kw)


def finished(t: Tiered, topic: str, partition: int) -> list[tuple[int, int]]:
    topic_id = t.store.topic(topic).topic_id
    return [
        (r.start_offset, r.end_offset)
        for r in t.store.segments(topic_id, partition, states=FINISHED)
    ]


def test_copies_exactly_the_eligible_segments_and_they_read_back_identical(tiered: Tiered):
    for log_ in tiered.logs():
        report = copy(tiered, log_.topic, log_.partition)
        assert [(s.start_offset, s.end_offset) for s in report.copied] == eligible(log_)
        assert finished(tiered, log_.topic, log_.partition) == eligible(log_)
        topic = tiered.store.topic(log_.topic)
        assert (
            tiered.store.highest_remote_offset(topic.topic_id, log_.partition)
            == (eligible(log_)[-1][1])
        )
        checks = verify_partition(log_, topic, tiered.store, tiered.rsm)
        assert [c.identical for c in checks] == [True] * len(eligible(log_))


def test_high_watermark_holds_back_the_last_rolled_segment(tiered: Tiered):
    lagging = tiered.log("orders", 1)
    rolled = len(lagging.segments()) - 1
    assert len(eligible(lagging)) == rolled - 1, "the generator lags partition 1's HW"
    copy(tiered, "orders", 1)
    assert len(finished(tiered, "orders", 1)) == rolled - 1

    # The follower catches up: the HW reaches the log end and the held-back segment goes.
    write_offset_checkpoint(
        lagging.log_dir.path / REPLICATION_OFFSET_CHECKPOINT,
        {
            **lagging.log_dir.checkpoint(REPLICATION_OFFSET_CHECKPOINT),
            ("orders", 1): lagging.log_end_offset(),
        },
    )
    report = copy(tiered, "orders", 1)
    assert len(report.copied) == 1
    assert len(finished(tiered, "orders", 1)) == rolled


def test_rerun_copies_nothing_twice(tiered: Tiered):
    copy(tiered, "payments", 0)
    keys = sorted(tiered.rsm.objects.list())
    again = copy(tiered, "payments", 0)
    assert again.copied == [] and again.cleaned_up == []
    assert sorted(tiered.rsm.objects.list()) == keys


def test_every_transition_is_in_the_history(tiered: Tiered):
    report = copy(tiered, "payments", 0)
    for segment in report.copied:
        events = tiered.store.events(segment_id=segment.segment_id)
        assert [(e.from_state, e.to_state) for e in events] == [
            (None, S.COPY_SEGMENT_STARTED),
            (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED),
        ]


OBJECT_KINDS = {
    "plain": {"log", "index", "timeindex", "snapshot", "leader_epoch_checkpoint"},
    "chunked-encrypted": {"log", "indexes", "rsm-manifest"},
}


def test_objects_are_recorded_with_sizes_and_checksums(tiered: Tiered):
    import hashlib

    report = copy(tiered, "payments", 0)
    for segment in report.copied:
        objects = tiered.store.segment_objects(segment.segment_id)
        assert OBJECT_KINDS[tiered.layout] <= {o.kind for o in objects}
        for obj in objects:
            stored = b"".join(tiered.rsm.objects.iter_chunks(obj.key))
            assert (len(stored), hashlib.sha256(stored).hexdigest()) == (obj.size, obj.sha256)
        log_obj = next(o for o in objects if o.kind == "log")
        if tiered.layout == "plain":
            assert log_obj.size == segment.size_in_bytes
            continue
        row = tiered.store.segment(segment.segment_id)
        manifest = tiered.rsm.manifest(remote_segment(tiered.store.topic("payments"), row))
        chunks = -(-segment.size_in_bytes // tiered.settings.storage.chunk_size)
        gcm_overhead = chunks * (12 + 16)  # a fresh IV and a tag per chunk
        assert manifest.encryption is not None
        if manifest.compression:
            assert log_obj.size < segment.size_in_bytes
        else:  # the first batch was already compressed: the heuristic skipped zstd
            assert log_obj.size == segment.size_in_bytes + gcm_overhead


def test_topic_without_tiering_is_skipped(tmp_path):
    from tests.support.tiered import build_tiered

    t = build_tiered(tmp_path, enable=False)
    report = copy(t, "payments", 0)
    assert report.skipped == "remote.storage.enable=false"
    assert list(t.rsm.objects.list()) == []


def test_dry_run_lists_but_writes_nothing(tiered: Tiered):
    report = copy(tiered, "payments", 0, dry_run=True)
    assert report.pending == [start for start, _ in eligible(tiered.log("payments", 0))]
    assert finished(tiered, "payments", 0) == []
    assert list(tiered.rsm.objects.list()) == []


def test_corrupt_segment_fails_naming_the_file_and_leaves_no_state(tiered: Tiered):
    log_ = tiered.log("orders", 0)
    second = log_.segments()[1]
    data = bytearray(second.log_path.read_bytes())
    data[200] ^= 0xFF
    second.log_path.write_bytes(bytes(data))

    with pytest.raises(KafkaFormatError, match=rf"{second.log_path.name}: byte \d+: crc"):
        copy(tiered, "orders", 0)
    # The first segment was copied. The batches are checked as they are uploaded, so the
    # corrupt one (and every one after it: no gap) ended as abandoned attempts in Kafka's
    # terminal state, their objects deleted.
    assert finished(tiered, "orders", 0) == eligible(log_)[:1]
    topic_id = tiered.store.topic("orders").topic_id
    rest = tiered.store.segments(topic_id, 0)[1:]
    assert [r.start_offset for r in rest] == [start for start, _ in eligible(log_)[1:]]
    assert {r.state for r in rest} == {S.DELETE_SEGMENT_FINISHED}
    assert set(tiered.rsm.objects.list()) == recorded_keys(tiered)

    data[200] ^= 0xFF
    second.log_path.write_bytes(bytes(data))
    copy(tiered, "orders", 0)
    assert finished(tiered, "orders", 0) == eligible(log_)


def test_missing_producer_snapshot_is_named(tiered: Tiered):
    log_ = tiered.log("payments", 0)
    snapshot = log_.producer_snapshot_path(log_.segments()[1].base_offset)
    snapshot.unlink()
    with pytest.raises(MissingFileError, match=snapshot.name):
        copy(tiered, "payments", 0)
    assert finished(tiered, "payments", 0) == []


def test_wrong_topic_id_refuses_to_copy(tiered: Tiered):
    (tiered.log("payments", 0).path / "partition.metadata").write_text(
        f"version: 0\ntopic_id: {new_kafka_uuid()}\n"
    )
    with pytest.raises(TopicIdMismatchError, match=r"partition\.metadata"):
        copy(tiered, "payments", 0)
    assert list(tiered.rsm.objects.list()) == []


def test_abandoned_attempt_is_deleted_before_copying(tiered: Tiered):
    topic = tiered.store.topic("payments")
    first = eligible(tiered.log("payments", 0))[0]
    ghost = new_kafka_uuid()
    tiered.store.ensure_partition(topic.topic_id, 0, log_start_offset=0, local_log_start_offset=0)
    tiered.store.add_segment(
        StartedSegment(
            segment_id=ghost,
            topic_id=topic.topic_id,
            partition=0,
            start_offset=first[0],
            end_offset=first[1],
            max_timestamp_ms=NOW_MS,
            leader_epoch=0,
            segment_leader_epochs=[(0, first[0])],
            segment_size_bytes=123,
            tiered_epoch=0,
            txn_index_empty=True,
            owner="airflow:killed-worker",
        ),
        actor="airflow:killed-worker",
        now_ms=NOW_MS,
    )
    from tierflow.rsm import RemoteSegment

    half = RemoteSegment("payments", topic.topic_id, 0, ghost, first[0], first[1])
    tiered.rsm.objects.put_bytes(tiered.rsm.key(half, "log"), b"half an upload")

    report = copy(tiered, "payments", 0)
    assert report.cleaned_up == [ghost]
    assert tiered.store.segment(ghost).state == S.DELETE_SEGMENT_FINISHED
    assert not any(ghost in key for key in tiered.rsm.objects.list())
    assert finished(tiered, "payments", 0) == eligible(tiered.log("payments", 0))


def test_a_live_lease_of_another_owner_blocks_until_it_expires(tiered: Tiered):
    """Expired as the copy's TTL (TIERFLOW_COPY_LEASE_TTL_S) judges it from the lease's
    taking, whatever TTL its holder had."""
    topic = tiered.store.topic("payments")
    tiered.store.ensure_partition(topic.topic_id, 0, log_start_offset=0, local_log_start_offset=0)
    assert tiered.store.acquire_lease(topic.topic_id, 0, "other", now_ms=NOW_MS, ttl_ms=60_000)
    with pytest.raises(PartitionBusyError, match="other"):
        copy(tiered, "payments", 0, clock=lambda: NOW_MS + 1_000, lease_ttl_s=60)
    with pytest.raises(PartitionBusyError, match="other"):
        copy(tiered, "payments", 0, clock=lambda: NOW_MS + 61_000, lease_ttl_s=900)
    report = copy(tiered, "payments", 0, clock=lambda: NOW_MS + 61_000, lease_ttl_s=60)
    assert report.copied


def test_deleting_remote_segments_never_makes_them_eligible_again(tiered: Tiered):
    """Kafka's highestOffsetForEpoch only grows: retention deleting the newest remote segment
    must not make the copy upload it again."""
    from tierflow.lifecycle.remote_delete import delete_remote_segment

    report = copy(tiered, "payments", 0)
    topic = tiered.store.topic("payments")
    newest = tiered.store.segment(report.copied[-1].segment_id)
    delete_remote_segment(tiered.store, tiered.rsm, topic, newest, actor="retention", now_ms=NOW_MS)
    assert tiered.store.partition(topic.topic_id, 0).highest_remote_offset == newest.end_offset
    again = copy(tiered, "payments", 0)
    assert again.copied == []


def test_finalize_can_be_retried_after_a_failed_rewrite_and_after_success(tiered: Tiered):
    from tierflow.lifecycle.copy.finalize import finalize_copy
    from tierflow.lifecycle.copy.plan import CopyFailedError
    from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
    from tierflow.lifecycle.copy.rewrite import rewrite_segment

    log_ = tiered.log("payments", 0)
    plan = prepare_copy(log_, tiered.store, rsm=tiered.rsm, owner=CopyOwner("o"))
    assert plan.jobs
    # Spark died: no results. Finalize cleans up and fails; Airflow's retry fails cleanly too.
    with pytest.raises(CopyFailedError, match="no result from the rewrite job"):
        finalize_copy(plan, {}, tiered.store, tiered.rsm, owner="o")
    with pytest.raises(CopyFailedError, match="is DELETE_SEGMENT_FINISHED, no longer being"):
        finalize_copy(plan, {}, tiered.store, tiered.rsm, owner="o")
    assert {tiered.store.segment(j.segment_id).state for j in plan.jobs} == {
        S.DELETE_SEGMENT_FINISHED
    }
    assert list(tiered.rsm.objects.list()) == []

    # The next run copies everything; clearing its finalize after success changes nothing.
    plan = prepare_copy(log_, tiered.store, rsm=tiered.rsm, owner=CopyOwner("o"))
    results = {job.segment_id: rewrite_segment(job, tiered.rsm) for job in plan.jobs}
    first = finalize_copy(plan, results, tiered.store, tiered.rsm, owner="o")
    keys = sorted(tiered.rsm.objects.list())
    plan.report.copied = []
    again = finalize_copy(plan, results, tiered.store, tiered.rsm, owner="o")
    assert again.copied == first.copied
    assert sorted(tiered.rsm.objects.list()) == keys
    assert finished(tiered, "payments", 0) == eligible(log_)


def test_an_open_transaction_holds_back_segments_below_the_high_watermark(tiered: Tiered):
    """Kafka copies below the last stable offset (C3). In the generated orders-0 a transaction
    of one producer is open across the roll at 1722; with the HW there, the segment before the
    roll stays local until the HW passes the transaction's marker."""
    log_ = tiered.log("orders", 0)
    bases = [s.base_offset for s in log_.segments()]
    roll = bases[3]
    checkpoint = log_.log_dir.checkpoint(REPLICATION_OFFSET_CHECKPOINT)
    write_offset_checkpoint(
        log_.log_dir.path / REPLICATION_OFFSET_CHECKPOINT, {**checkpoint, ("orders", 0): roll}
    )
    stable = last_stable_offset(log_, roll)
    assert bases[2] < stable.offset < roll, "the generator's transaction spans the roll"

    report = copy(tiered, "orders", 0)
    assert finished(tiered, "orders", 0) == [(bases[0], bases[1] - 1), (bases[1], bases[2] - 1)]
    assert report.held_back == (
        f"last stable offset {stable.offset} is below the high watermark {roll}: "
        f"producer {stable.open_transaction_producer}'s transaction is still open"
    )

    write_offset_checkpoint(log_.log_dir.path / REPLICATION_OFFSET_CHECKPOINT, checkpoint)
    report = copy(tiered, "orders", 0)
    assert report.held_back is None
    assert finished(tiered, "orders", 0) == eligible(log_)
