"""LogSegment: file names and what it derives from its batches."""

from __future__ import annotations

from pathlib import Path

from tests.unit.kafka.log_builders import BASE_TS, legacy_message_set, v2_batch, write
from tierflow.kafka.leader_epoch import EpochEntry
from tierflow.kafka.segment import LogSegment


def make_segment(directory: Path, base: int, *chunks: bytes) -> LogSegment:
    segment = LogSegment(base, directory)
    write(segment.log_path, *chunks)
    return segment


def test_paths(tmp_path: Path) -> None:
    segment = LogSegment(42, tmp_path)
    assert segment.log_path.name == "00000000000000000042.log"
    assert segment.index_path.name == "00000000000000000042.index"
    assert segment.time_index_path.name == "00000000000000000042.timeindex"
    assert segment.txn_index_path.name == "00000000000000000042.txnindex"
    assert LogSegment.from_log_path(segment.log_path) == segment
    assert not segment.has_txn_index()
    segment.txn_index_path.write_bytes(b"")
    assert segment.has_txn_index()


def test_leader_epochs_from_batches(tmp_path: Path) -> None:
    segment = make_segment(
        tmp_path,
        100,
        v2_batch(100, 3, leader_epoch=0),
        v2_batch(103, 2, leader_epoch=0),
        v2_batch(105, 4, leader_epoch=2),
        v2_batch(109, 1, leader_epoch=2),
        v2_batch(110, 5, leader_epoch=5),
    )
    assert segment.leader_epochs() == [EpochEntry(0, 100), EpochEntry(2, 105), EpochEntry(5, 110)]
    assert segment.last_offset() == 114
    assert segment.largest_timestamp() == BASE_TS + 4
    assert segment.size_in_bytes() == segment.log_path.stat().st_size


def test_legacy_batches_have_no_epoch(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, 0, legacy_message_set(1, 0, 3), v2_batch(3, 2, leader_epoch=4))
    assert segment.leader_epochs() == [EpochEntry(4, 3)]


def test_largest_timestamp_is_not_the_last_batch(tmp_path: Path) -> None:
    segment = make_segment(
        tmp_path, 0, v2_batch(0, 1, timestamp=BASE_TS + 50), v2_batch(1, 1, timestamp=BASE_TS)
    )
    assert segment.largest_timestamp() == BASE_TS + 50


def test_empty_segment(tmp_path: Path) -> None:
    segment = make_segment(tmp_path, 38)
    assert segment.last_offset() is None
    assert segment.largest_timestamp() == -1
    assert segment.leader_epochs() == []
    assert list(segment.batches()) == []
