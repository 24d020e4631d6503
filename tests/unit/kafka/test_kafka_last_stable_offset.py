"""The last stable offset, rebuilt offline from snapshots and batch headers (Kafka's copy bound).

Checked against hand-built logs for each rule, and against the demo generator, which keeps
producer state as ProducerStateManager does and records in every aborted transaction the LSO of
the moment it was aborted.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.unit.kafka.log_builders import control_batch, v2_batch, write
from tierflow.demo.broker import generate_log_dir
from tierflow.kafka.last_stable_offset import last_stable_offset
from tierflow.kafka.log_dir import LogDir, PartitionLog
from tierflow.kafka.naming import offset_prefix
from tierflow.kafka.producer_snapshot import ProducerSnapshotEntry, write_producer_snapshot
from tierflow.kafka.txn_index import read_txn_index

A, B = 4_001, 4_002


def txn(base_offset: int, producer_id: int, count: int = 2) -> bytes:
    return v2_batch(
        base_offset,
        count,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=base_offset,
        transactional=True,
    )


def partition(tmp_path: Path, *segments: tuple[int, list[bytes]]) -> PartitionLog:
    directory = tmp_path / "orders-0"
    directory.mkdir()
    for base, batches in segments:
        write(directory / f"{offset_prefix(base)}.log", *batches)
    return LogDir(tmp_path).partition("orders", 0)


def snapshot(log_: PartitionLog, offset: int, open_txns: dict[int, int]) -> None:
    write_producer_snapshot(
        log_.producer_snapshot_path(offset),
        [
            ProducerSnapshotEntry(pid, 0, 0, offset - 1, 0, 0, 7, first)
            for pid, first in sorted(open_txns.items())
        ],
    )


def test_without_transactions_it_is_the_high_watermark(tmp_path: Path) -> None:
    log_ = partition(tmp_path, (0, [v2_batch(0, 5), v2_batch(5, 5)]), (10, [v2_batch(10, 3)]))
    stable = last_stable_offset(log_, 13)
    assert (stable.offset, stable.held_back) == (13, False)
    assert last_stable_offset(log_, 7).offset == 7, "never above the high watermark"


def test_an_open_transaction_holds_it_at_its_first_offset(tmp_path: Path) -> None:
    log_ = partition(tmp_path, (0, [v2_batch(0, 3), txn(3, A), v2_batch(5, 4)]))
    stable = last_stable_offset(log_, 9)
    assert (stable.offset, stable.open_transaction_producer, stable.held_back) == (3, A, True)


def test_a_marker_counts_only_once_the_high_watermark_has_passed_it(tmp_path: Path) -> None:
    log_ = partition(
        tmp_path, (0, [txn(0, A), v2_batch(2, 3), control_batch(5, producer_id=A, abort=False)])
    )
    assert last_stable_offset(log_, 5).offset == 0, "marker at the HW: not yet replicated"
    assert last_stable_offset(log_, 6).offset == 6


def test_the_oldest_open_transaction_wins_and_aborts_end_them_too(tmp_path: Path) -> None:
    log_ = partition(
        tmp_path,
        (0, [txn(0, A), txn(2, B), control_batch(4, producer_id=A, abort=True)]),
        (5, [txn(5, A), control_batch(7, producer_id=B, abort=False), v2_batch(8, 2)]),
    )
    assert last_stable_offset(log_, 4).offset == 0
    stable = last_stable_offset(log_, 5)
    assert (stable.offset, stable.open_transaction_producer) == (2, B)
    stable = last_stable_offset(log_, 10)
    assert (stable.offset, stable.open_transaction_producer) == (5, A)


def test_a_snapshot_knows_transactions_opened_in_segments_already_deleted(
    tmp_path: Path,
) -> None:
    """Retention removed the segment where A's transaction began; the snapshot at the roll
    still holds it open, and only its marker, after the snapshot, ends it."""
    log_ = partition(
        tmp_path,
        (20, [v2_batch(20, 5), txn(25, B)]),
        (30, [v2_batch(30, 2), control_batch(32, producer_id=A, abort=False)]),
    )
    snapshot(log_, 20, {A: 12})
    stable = last_stable_offset(log_, 30)
    assert (stable.offset, stable.open_transaction_producer) == (12, A)
    stable = last_stable_offset(log_, 33)
    assert (stable.offset, stable.open_transaction_producer) == (25, B)


def test_a_snapshot_above_the_high_watermark_is_not_used(tmp_path: Path) -> None:
    """A snapshot at 30 was taken when the log ended there, so it knows A's marker at 28; with
    the HW at 28 that marker is not yet replicated and A is still open."""
    log_ = partition(
        tmp_path,
        (0, [txn(0, A), v2_batch(2, 26), control_batch(28, producer_id=A, abort=False)]),
        (30, [v2_batch(30, 2)]),
    )
    snapshot(log_, 30, {})
    assert last_stable_offset(log_, 28).offset == 0
    assert last_stable_offset(log_, 29).offset == 29
    assert last_stable_offset(log_, 32).offset == 32


def test_a_corrupt_snapshot_is_passed_over_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log_ = partition(tmp_path, (0, [txn(0, A), v2_batch(2, 3)]), (5, [v2_batch(5, 2)]))
    snapshot(log_, 0, {})
    log_.producer_snapshot_path(5).write_bytes(b"\x00\x01 not a snapshot")
    with caplog.at_level(logging.WARNING):
        stable = last_stable_offset(log_, 7)
    assert (stable.offset, stable.open_transaction_producer) == (0, A)
    assert "00000000000000000005.snapshot" in caplog.text


def test_an_unreadable_segment_keeps_copying_below_it(tmp_path: Path) -> None:
    """Transactions opened in a segment that cannot be read are unknown, so the bound is that
    segment's base offset: nothing below it can belong to them."""
    broken = bytearray(v2_batch(10, 3))
    broken[16] = 9  # the magic byte
    log_ = partition(tmp_path, (0, [v2_batch(0, 10)]), (10, [bytes(broken)]))
    stable = last_stable_offset(log_, 13)
    assert stable.offset == 10 and stable.open_transaction_producer is None
    assert "00000000000000000010.log" in stable.unreadable


def test_a_copy_reads_the_active_segment_only_for_a_transaction_open_below_it(
    tmp_path: Path,
) -> None:
    """``needed_below`` (the active segment's base: a copy takes nothing from there): with no
    transaction open at it, its batches are not read, here a broken one, and no rolled segment
    is held back; one opened below it is still followed into them to its marker."""
    broken = bytearray(v2_batch(12, 3))
    broken[16] = 9  # the magic byte
    log_ = partition(tmp_path, (0, [v2_batch(0, 10)]), (10, [txn(10, A), bytes(broken)]))
    assert last_stable_offset(log_, 15).unreadable  # the whole walk reads it
    stable = last_stable_offset(log_, 15, needed_below=10)
    assert (stable.offset, stable.held_back, stable.unreadable) == (15, False, None)

    (tmp_path / "open").mkdir()
    log_ = partition(
        tmp_path / "open",
        (0, [v2_batch(0, 5), txn(5, A, count=3), v2_batch(8, 2)]),
        (10, [txn(10, B), v2_batch(12, 2), control_batch(14, producer_id=A, abort=False)]),
    )
    for high_watermark, lso in ((14, 5), (15, 10)):  # A open, then committed: B opened above
        assert last_stable_offset(log_, high_watermark, needed_below=10).offset == lso
        assert last_stable_offset(log_, high_watermark).offset == lso


def test_it_agrees_with_the_generator_at_every_aborted_transaction(tmp_path: Path) -> None:
    """The generator stores in each .txnindex entry the LSO at its abort (Kafka's
    lastStableOffset(completedTxn)): the LSO with the HW just past the marker."""
    generated = generate_log_dir(tmp_path / "logs", now_ms=1_800_000_000_000)
    log_dir = LogDir(generated.path)
    checked = 0
    for described in generated.partitions:
        log_ = log_dir.partition(described.topic, described.partition)
        for segment in log_.segments():
            if not segment.has_txn_index():
                continue
            for aborted in read_txn_index(segment.txn_index_path):
                stable = last_stable_offset(log_, aborted.last_offset + 1)
                assert stable.offset == aborted.last_stable_offset, (segment, aborted)
                checked += 1
    assert checked > 10, checked
