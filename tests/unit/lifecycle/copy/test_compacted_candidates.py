"""Copy eligibility on a compacted topic: Kafka's rule, then the log cleaner's three (see
lifecycle/copy/compacted.py), on segment lists and on a real broker's cleaned partition."""

from __future__ import annotations

from pathlib import Path

import pytest

from tierflow.kafka.cleaner import CleanerState, cleaner_state
from tierflow.kafka.log_dir import LogDir
from tierflow.kafka.segment import LogSegment
from tierflow.lifecycle.copy.compacted import compacted_candidates

SEGMENTS = [LogSegment(base, Path("/nonexistent")) for base in (0, 100, 200, 300)]


def plan(from_offset: int, cleaner: CleanerState, upper_bound: int = 350):
    found = compacted_candidates(
        SEGMENTS, from_offset=from_offset, upper_bound=upper_bound, cleaner=cleaner
    )
    return [(c.start_offset, c.end_offset) for c in found.candidates], found.waiting


def test_only_what_the_cleaner_has_cleaned_is_copied() -> None:
    assert plan(0, CleanerState(300)) == ([(0, 99), (100, 199), (200, 299)], None)
    copied, waiting = plan(0, CleanerState(200))
    assert copied == [(0, 99), (100, 199)]
    assert waiting == "offsets from 200 wait for the log cleaner's next pass"


def test_a_partition_never_cleaned_waits_for_the_cleaner() -> None:
    waiting = "offsets from 0 wait for the log cleaner's next pass"
    assert plan(0, CleanerState(None)) == ([], waiting)


def test_nothing_is_copied_while_a_pass_replaces_segments() -> None:
    swapping = CleanerState(300, ("00000000000000000000.log.swap",))
    assert plan(0, swapping) == (
        [],
        "the log cleaner is replacing 00000000000000000000.log.swap",
    )


def test_a_segment_merged_across_the_remote_boundary_is_copied_as_a_slice() -> None:
    """Offsets up to 149 are remote; a pass merged them into the segment at 100."""
    found = compacted_candidates(
        SEGMENTS, from_offset=150, upper_bound=350, cleaner=CleanerState(300)
    )
    slices = [(c.start_offset, c.end_offset, c.slice_from) for c in found.candidates]
    assert slices == [(150, 199, 150), (200, 299, None)]


def test_nothing_eligible_by_kafkas_rule_is_no_wait() -> None:
    assert plan(0, CleanerState(None), upper_bound=0) == ([], None)


def test_a_real_brokers_cleaned_partition(kafka_samples: Path) -> None:
    """Kafka 2.7's __consumer_offsets-39: the cleaner checkpointed 18, the segment at 0 is
    cleaned (and compacted: offsets are missing from it) and the one at 18 is active."""
    log_dir = LogDir(kafka_samples / "DonaldY__kafka-2.7.1" / "kafka-logs")
    log_ = next(p for p in log_dir.partitions() if p.key == ("__consumer_offsets", 39))
    state = cleaner_state(log_)
    assert state == CleanerState(18)
    found = compacted_candidates(
        log_.segments(), from_offset=0, upper_bound=log_.high_watermark(), cleaner=state
    )
    assert [(c.start_offset, c.end_offset) for c in found.candidates] == [(0, 17)]
    assert found.waiting is None


def test_a_pass_under_way_is_seen_in_the_partition_dir(tmp_path: Path) -> None:
    partition = tmp_path / "orders-0"
    partition.mkdir()
    for name in ("00000000000000000000.log", "00000000000000000000.log.cleaned"):
        (partition / name).write_bytes(b"")
    (tmp_path / "cleaner-offset-checkpoint").write_text("0\n1\norders 0 40\n")
    log_ = next(p for p in LogDir(tmp_path).partitions() if p.key == ("orders", 0))
    assert cleaner_state(log_) == CleanerState(40, ("00000000000000000000.log.cleaned",))


@pytest.mark.parametrize("first_dirty", [None, 0])
def test_cleaned_below_is_zero_until_a_pass_checkpoints(first_dirty: int | None) -> None:
    assert CleanerState(first_dirty).cleaned_below() == 0
