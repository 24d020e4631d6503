"""The .timeindex reader/writer: round trip, lookups and the crash-tail corruption."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.unit.kafka.log_builders import write
from tierflow.kafka.errors import CorruptIndexError
from tierflow.kafka.time_index import TimeIndex, TimestampOffset, write_time_index

BASE = 500
ENTRIES = [TimestampOffset(1000, 510), TimestampOffset(2000, 530), TimestampOffset(2500, 531)]


def test_round_trip_and_exact_bytes(tmp_path: Path) -> None:
    path = tmp_path / "x.timeindex"
    write_time_index(path, BASE, ENTRIES)
    assert path.read_bytes()[:12] == struct.pack(">qi", 1000, 10)
    assert TimeIndex.read(path, BASE).entries == ENTRIES


def test_lookup() -> None:
    index = TimeIndex(BASE, ENTRIES)
    assert index.lookup(999) == TimestampOffset(-1, BASE)
    assert index.lookup(1000) == ENTRIES[0]
    assert index.lookup(2499) == ENTRIES[1]
    assert index.lookup(10**15) == ENTRIES[2]


def test_zero_filled_tail_after_a_crash_is_ignored(tmp_path: Path) -> None:
    """Kafka's classic "last timestamp is 0 which is less than the first timestamp" file."""
    path = tmp_path / "x.timeindex"
    write_time_index(path, BASE, ENTRIES)
    path.write_bytes(path.read_bytes() + bytes(12 * 50))
    assert TimeIndex.read(path, BASE).entries == ENTRIES


def test_size_not_a_multiple_of_the_entry(tmp_path: Path) -> None:
    path = write(tmp_path / "x.timeindex", struct.pack(">qi", 1, 1), bytes(8))
    with pytest.raises(CorruptIndexError, match="12-byte") as err:
        TimeIndex.read(path, BASE)
    assert err.value.position == 12


def test_going_backwards_or_past_the_log_is_corrupt(tmp_path: Path) -> None:
    path = write(tmp_path / "x.timeindex", struct.pack(">qiqi", 2000, 5, 1000, 6))
    with pytest.raises(CorruptIndexError) as err:
        TimeIndex.read(path, BASE)
    assert err.value.position == 12
    good = tmp_path / "y.timeindex"
    write_time_index(good, BASE, ENTRIES)
    assert TimeIndex.read(good, BASE, last_offset=531).entries == ENTRIES
    with pytest.raises(CorruptIndexError, match="past the log's last offset 530") as err:
        TimeIndex.read(good, BASE, last_offset=530)
    assert err.value.position == 24
