"""plan_remote_retention as a pure function: Kafka's RLMExpirationTask rules, one at a time.

Rows here are plain data with the attributes of RemoteLogSegment; no store is involved.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.lifecycle.retention.remote_plan import (
    DEFAULT_COPY_GRACE_MS,
    LogView,
    RetentionReason,
    plan_remote_retention,
    truncate_from_start,
)
from tierflow.metadata.states import RemoteLogSegmentState as S

NOW = 10_000_000
R = RetentionReason


@dataclass(frozen=True)
class Row:
    segment_id: str
    start_offset: int
    end_offset: int
    epochs: tuple[tuple[int, int], ...] = ((0, -1),)
    max_timestamp_ms: int = NOW
    segment_size_bytes: int = 100
    state: str = S.COPY_SEGMENT_FINISHED.value
    created_ms: int = 0

    @property
    def leader_epochs(self) -> list[tuple[int, int]]:
        if self.epochs == ((0, -1),):
            return [(0, self.start_offset)]
        return list(self.epochs)


def ten_segments(**overrides: object) -> list[Row]:
    """Offsets 0-999 in ten segments of 100, epoch 0, segment i's max timestamp = 1000 * i."""
    return [
        Row(f"s{i}", i * 100, i * 100 + 99, max_timestamp_ms=1000 * i, **overrides)  # type: ignore[arg-type]
        for i in range(10)
    ]


@dataclass(frozen=True)
class TopicRow:
    """What planning reads of a topic: nothing retained unless a test says so."""

    name: str = "t"
    topic_id: str = "id"
    retention_ms: int = -1
    retention_bytes: int = -1
    cleanup_policy: str = "delete"


# The partition's log unless a test says otherwise: offsets 0-1199, all in epoch 0.
LOG = LogView(log_start_offset=0, log_end_offset=1200, leader_epochs=(EpochEntry(0, 0),))


def plan(
    segments: list[Row],
    *,
    retention_ms: int = -1,
    retention_bytes: int = -1,
    copy_lease_live: bool = False,
    copy_grace_ms: int = DEFAULT_COPY_GRACE_MS,
    cleanup_policy: str = "delete",
    **log_fields: object,
):
    """Plan partition 0 of topic "t" at NOW; ``log_fields`` replace fields of LOG."""
    return plan_remote_retention(
        TopicRow(
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
            cleanup_policy=cleanup_policy,
        ),
        0,
        segments,  # type: ignore[arg-type]
        replace(LOG, **log_fields),  # type: ignore[arg-type]
        now_ms=NOW,
        copy_lease_live=copy_lease_live,
        copy_grace_ms=copy_grace_ms,
    )


def test_nothing_configured_deletes_nothing():
    p = plan(ten_segments())
    assert p.deletions == [] and p.new_log_start_offset is None
    assert p.stopped_at == "segment s0: retained"
    assert (p.remote_log_metadata_count, p.remote_log_size_bytes) == (10, 1000)


def test_retention_ms_is_strict_newer_trunk_less_than():
    # cleanup_until = NOW - retention_ms = 3000: s0..s2 (ts 0, 1000, 2000) go; s3 (ts 3000) stays.
    p = plan(ten_segments(), retention_ms=NOW - 3000)
    assert p.segment_ids == ["s0", "s1", "s2"]
    assert {d.reason for d in p.deletions} == {R.RETENTION_MS}
    assert p.new_log_start_offset == 300
    assert p.stopped_at == "segment s3: retained"


def test_retention_ms_cleanup_until_below_zero_deletes_nothing():
    assert plan(ten_segments(), retention_ms=NOW + 1).deletions == []


def test_retention_bytes_counts_only_local_bytes_and_deletes_greedily_oldest_first():
    # 1000 remote + 250 only-local = 1250 against 1000: 250 over, so two 100-byte segments go
    # (a third would overshoot: 50 - 100 < 0).
    p = plan(ten_segments(), retention_bytes=1000, only_local_bytes=250)
    assert p.segment_ids == ["s0", "s1"]
    assert {d.reason for d in p.deletions} == {R.RETENTION_BYTES}
    assert [d.size_bytes for d in p.deletions] == [100, 100]
    assert p.new_log_start_offset == 200


def test_a_time_breach_also_uses_up_the_size_breach():
    p = plan(ten_segments(), retention_bytes=700, retention_ms=NOW - 1500)
    assert [(d.segment_id, d.reason) for d in p.deletions] == [
        ("s0", R.RETENTION_MS),
        ("s1", R.RETENTION_MS),
        ("s2", R.RETENTION_BYTES),
    ]


def test_size_counts_only_finished_segments_in_the_lineage():
    segments = ten_segments()
    # s9 lies beyond the log end offset: outside the lineage, so not counted (and not deleted).
    p = plan(segments, retention_bytes=900, log_end_offset=950)
    assert p.deletions == []
    p = plan(segments, retention_bytes=800, log_end_offset=950)
    assert p.segment_ids == ["s0"]


def test_log_start_offset_breach_deletes_without_moving_the_log_start():
    p = plan(ten_segments(), log_start_offset=250)
    assert [(d.segment_id, d.reason) for d in p.deletions] == [
        ("s0", R.LOG_START_OFFSET),
        ("s1", R.LOG_START_OFFSET),
    ]
    assert p.new_log_start_offset is None  # already at 250
    assert p.stopped_at == "segment s2: retained"  # straddles 250: kept


def test_lineage_is_truncated_at_the_log_start_like_kafkas_cache():
    entries = [EpochEntry(0, 0), EpochEntry(2, 300), EpochEntry(5, 700)]
    assert truncate_from_start(entries, 400) == [EpochEntry(2, 400), EpochEntry(5, 700)]
    assert truncate_from_start(entries, 300) == [EpochEntry(2, 300), EpochEntry(5, 700)]
    assert truncate_from_start(entries, 0) == [
        EpochEntry(0, 0),
        EpochEntry(2, 300),
        EpochEntry(5, 700),
    ]


def test_unclean_election_deletes_segments_whose_epochs_all_predate_the_earliest():
    # The new leader's cache starts at epoch 4 (offset 200). s0/s1 carry only epochs 1 and 2:
    # nobody can read them any more (E8). s2 carries epoch 2 then 4: not all older, kept.
    segments = [
        Row("s0", 0, 99, ((1, 0),)),
        Row("s1", 100, 199, ((2, 100),)),
        Row("s2", 150, 299, ((2, 150), (4, 200))),
        Row("s3", 300, 399, ((4, 300),)),
    ]
    p = plan(segments, leader_epochs=[EpochEntry(4, 200)], log_end_offset=400)
    assert [(d.segment_id, d.reason) for d in p.deletions] == [
        ("s0", R.OUTSIDE_LINEAGE),
        ("s1", R.OUTSIDE_LINEAGE),
    ]
    assert p.new_log_start_offset is None  # E8 never moves the log start


def test_segments_outside_the_lineage_are_skipped_without_stopping_the_scan():
    # d1 was written by a diverged leader (epoch 1 never made it into this log's history):
    # isRemoteSegmentWithinLeaderEpochs rejects it, so it is skipped and the scan goes on to
    # s1, which is expired. Kafka never deletes d1 by retention (E10) and neither does tierflow.
    segments = [
        Row("s0", 0, 99, ((0, 0),), max_timestamp_ms=0),
        Row("d1", 100, 149, ((0, 100), (1, 120)), max_timestamp_ms=0),
        Row("s1", 100, 199, ((0, 100),), max_timestamp_ms=0),
        Row("s2", 200, 299, ((3, 200),), max_timestamp_ms=NOW),
    ]
    p = plan(
        segments,
        leader_epochs=[EpochEntry(0, 0), EpochEntry(3, 200)],
        log_end_offset=300,
        retention_ms=1000,
    )
    assert p.segment_ids == ["s0", "s1"]
    assert p.stopped_at == "segment s2: retained"


def test_failed_deletes_are_retried_first_wherever_they_lie():
    segments = ten_segments()
    segments[7] = Row("s7", 700, 799, state=S.DELETE_SEGMENT_STARTED.value, max_timestamp_ms=7000)
    p = plan(segments, retention_ms=NOW - 1500)
    assert [(d.segment_id, d.reason) for d in p.deletions] == [
        ("s7", R.RETRY_DELETE),
        ("s0", R.RETENTION_MS),
        ("s1", R.RETENTION_MS),
    ]
    assert p.new_log_start_offset == 200  # a retry never moves the log start


def test_tombstones_are_ignored():
    segments = [Row("gone", 0, 99, state=S.DELETE_SEGMENT_FINISHED.value), *ten_segments()[1:]]
    p = plan(segments, retention_ms=NOW - 1500)
    assert p.segment_ids == ["s1"]
    assert p.remote_log_metadata_count == 9


def copy_started(created_ms: int) -> Row:
    return Row("c", 1000, 1099, state=S.COPY_SEGMENT_STARTED.value, created_ms=created_ms)


def test_stale_copy_is_deleted_and_never_moves_the_log_start():
    old = NOW - 2 * 3_600_000
    p = plan([*ten_segments(), copy_started(old)], copy_grace_ms=3_600_000)
    assert [(d.segment_id, d.reason, d.state) for d in p.deletions] == [
        ("c", R.STALE_COPY, S.COPY_SEGMENT_STARTED.value)
    ]
    assert p.new_log_start_offset is None
    assert p.remote_log_size_bytes == 1000  # COPY_SEGMENT_STARTED is not counted (newer trunk)


def test_copy_with_a_live_lease_or_inside_the_grace_is_left_alone():
    old = NOW - 2 * 3_600_000
    assert plan([*ten_segments(), copy_started(old)], copy_lease_live=True).deletions == []
    young = NOW - 60_000
    assert plan([*ten_segments(), copy_started(young)]).deletions == []


def test_a_copy_in_progress_stops_the_scan_like_segment_ids_being_copied():
    # A STARTED row inside the scanned range, still live: E5a stops everything after it.
    segments = ten_segments()
    segments.insert(2, Row("c", 150, 199, state=S.COPY_SEGMENT_STARTED.value, created_ms=NOW))
    p = plan(segments, retention_ms=NOW - 5500)
    assert p.segment_ids == ["s0", "s1"]
    assert p.stopped_at == "segment c: being copied"


def test_a_segment_spanning_epochs_is_deleted_once():
    segments = [
        Row("a", 0, 199, ((0, 0), (1, 100)), max_timestamp_ms=0),
        Row("b", 200, 299, ((1, 200),), max_timestamp_ms=NOW),
    ]
    p = plan(
        segments,
        leader_epochs=[EpochEntry(0, 0), EpochEntry(1, 100)],
        log_end_offset=300,
        retention_ms=1000,
    )
    assert p.segment_ids == ["a"]
    assert p.new_log_start_offset == 200


def test_planning_is_linear_and_pure():
    many = [Row(f"s{i}", i * 10, i * 10 + 9, max_timestamp_ms=i) for i in range(20_000)]
    before = list(many)
    p = plan(many, retention_ms=NOW - 10_000, log_end_offset=200_000)
    assert len(p.deletions) == 10_000
    assert many == before


def test_retention_applies_to_a_compacted_topic_only_with_delete_in_its_policy() -> None:
    """Kafka's LogConfig.delete: a compact-only topic keeps every segment, whatever its age or
    the partition's size; compact,delete expires them as cleanup.policy=delete does."""
    limits = {"retention_ms": 1, "retention_bytes": 100}
    assert plan(ten_segments(), cleanup_policy="compact", **limits).deletions == []
    deleted = plan(ten_segments(), cleanup_policy="compact,delete", **limits).deletions
    assert deleted == plan(ten_segments(), **limits).deletions != []
