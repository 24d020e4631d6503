"""Copy eligibility, rule by rule, as Kafka's RLMCopyTask.candidateLogSegments decides it."""

from __future__ import annotations

from pathlib import Path

from tierflow.kafka.segment import LogSegment
from tierflow.lifecycle.copy.candidates import (
    candidate_segments,
    copy_start_offset,
    past_the_remote_end,
)

SEGMENTS = [LogSegment(base, Path("/nonexistent")) for base in (0, 100, 200, 300)]


def bases(from_offset: int, upper_bound: int) -> list[tuple[int, int]]:
    found = candidate_segments(SEGMENTS, from_offset=from_offset, upper_bound=upper_bound)
    return [(c.base_offset, c.end_offset) for c in found]


def test_all_rolled_segments_qualify_when_the_high_watermark_is_at_the_end():
    assert bases(0, 350) == [(0, 99), (100, 199), (200, 299)]


def test_the_active_segment_never_qualifies():
    assert (300, 399) not in bases(0, 10_000)
    assert candidate_segments(SEGMENTS[:1], from_offset=0, upper_bound=10_000) == []


def test_next_base_must_be_at_or_below_the_high_watermark():
    assert bases(0, 200) == [(0, 99), (100, 199)]  # next base 200 <= HW 200
    assert bases(0, 199) == [(0, 99)]  # segment 100-199 still has offsets at/above HW


def test_start_is_after_the_highest_remote_offset():
    assert bases(copy_start_offset(99, 0), 350) == [(100, 199), (200, 299)]


def test_start_is_never_below_the_log_start_offset():
    # DeleteRecords moved the log start into the second segment: the first is not copied.
    assert bases(copy_start_offset(-1, 150), 350) == [(100, 199), (200, 299)]


def test_a_segment_holding_the_start_offset_is_copied_whole():
    assert bases(150, 350)[0] == (100, 199)


def test_nothing_qualifies_with_an_empty_log_or_zero_high_watermark():
    assert bases(0, 0) == []
    assert candidate_segments([], from_offset=0, upper_bound=100) == []


def test_offsets_already_remote_are_sliced_off_where_a_new_leader_rolled_elsewhere():
    # The old leader's last remote segment ended at 149; this replica's segment holds 100-199.
    found = candidate_segments(SEGMENTS, from_offset=copy_start_offset(149, 0), upper_bound=350)
    sliced = past_the_remote_end(found, 149)
    assert [(c.start_offset, c.end_offset) for c in sliced] == [(150, 199), (200, 299)]
    assert [c.slice_from for c in sliced] == [150, None]


def test_a_log_start_inside_a_segment_still_copies_it_whole_as_kafka_does():
    found = candidate_segments(SEGMENTS, from_offset=copy_start_offset(-1, 150), upper_bound=350)
    assert [c.slice_from for c in past_the_remote_end(found, -1)] == [None, None]
