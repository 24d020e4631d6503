"""The .index reader/writer, its sanity checks and lookups against a real log layout."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.unit.kafka.log_builders import v2_batch, write
from tierflow.kafka.errors import CorruptIndexError
from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition, write_offset_index
from tierflow.kafka.record_batch import iter_batches

BASE = 1000
ENTRIES = [OffsetPosition(1010, 4096), OffsetPosition(1025, 8200), OffsetPosition(1040, 12300)]


def test_round_trip_and_exact_bytes(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000001000.index"
    write_offset_index(path, BASE, ENTRIES)
    assert path.read_bytes()[:8] == struct.pack(">ii", 10, 4096)
    assert OffsetIndex.read(path, BASE).entries == ENTRIES


def test_lookup() -> None:
    index = OffsetIndex(BASE, ENTRIES)
    assert index.lookup(1005) == OffsetPosition(BASE, 0)
    assert index.lookup(1010) == ENTRIES[0]
    assert index.lookup(1024) == ENTRIES[0]
    assert index.lookup(1025) == ENTRIES[1]
    assert index.lookup(10**9) == ENTRIES[2]
    assert OffsetIndex(BASE, []).lookup(1042) == OffsetPosition(BASE, 0)


def test_zero_filled_preallocated_tail_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    write_offset_index(path, BASE, ENTRIES)
    path.write_bytes(path.read_bytes() + bytes(8 * 1000))
    assert OffsetIndex.read(path, BASE).entries == ENTRIES
    path.write_bytes(bytes(10 * 1024))  # a freshly preallocated, still empty index
    assert OffsetIndex.read(path, BASE).entries == []


def test_size_not_a_multiple_of_the_entry(tmp_path: Path) -> None:
    path = write(tmp_path / "x.index", struct.pack(">ii", 1, 10), b"\x00\x01\x02")
    with pytest.raises(CorruptIndexError, match="not a multiple of the 8-byte") as err:
        OffsetIndex.read(path, BASE)
    assert err.value.position == 8


def test_entry_past_end_of_log(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    write_offset_index(path, BASE, ENTRIES)
    assert OffsetIndex.read(path, BASE, log_size=12301).entries == ENTRIES
    with pytest.raises(CorruptIndexError, match="past the end of the 12300-byte log") as err:
        OffsetIndex.read(path, BASE, log_size=12300)
    assert err.value.position == 16  # the third entry's byte position in the index
    assert str(err.value).startswith(f"{path}: byte 16: ")


def test_offsets_must_increase(tmp_path: Path) -> None:
    path = write(tmp_path / "x.index", struct.pack(">iiii", 5, 100, 5, 200))
    with pytest.raises(CorruptIndexError) as err:
        OffsetIndex.read(path, BASE)
    assert err.value.position == 8
    with pytest.raises(ValueError):
        write_offset_index(tmp_path / "y.index", BASE, [OffsetPosition(BASE - 1, 0)])


def test_lookup_finds_a_position_from_which_the_offset_is_reachable(tmp_path: Path) -> None:
    """Build the index the way the broker does (every ~4 KiB) and use it to seek."""
    log = write(tmp_path / "x.log", *(v2_batch(BASE + 3 * i, 3) for i in range(60)))
    entries, since_last = [], 0
    for batch in iter_batches(log):
        if since_last >= 4096:
            entries.append(OffsetPosition(batch.last_offset, batch.position))
            since_last = 0
        since_last += batch.size_in_bytes
    assert len(entries) >= 3
    write_offset_index(tmp_path / "x.index", BASE, entries)
    index = OffsetIndex.read(tmp_path / "x.index", BASE, log_size=log.stat().st_size)
    for target in (BASE, BASE + 50, BASE + 100, BASE + 179):
        start = index.lookup(target).position
        found = next(b for b in iter_batches(log, start_position=start) if b.last_offset >= target)
        assert found.base_offset <= target <= found.last_offset
