"""The .txnindex reader/writer and Kafka's aborted-transaction collection."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.unit.kafka.log_builders import write
from tierflow.kafka.errors import CorruptIndexError
from tierflow.kafka.txn_index import AbortedTxn, collect_aborted, read_txn_index, write_txn_index

ENTRIES = [
    AbortedTxn(producer_id=7, first_offset=100, last_offset=120, last_stable_offset=100),
    AbortedTxn(producer_id=8, first_offset=130, last_offset=150, last_stable_offset=125),
    AbortedTxn(producer_id=9, first_offset=160, last_offset=170, last_stable_offset=200),
    AbortedTxn(producer_id=10, first_offset=210, last_offset=220, last_stable_offset=205),
]


def test_round_trip_and_exact_bytes(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    write_txn_index(path, ENTRIES)
    assert path.read_bytes()[:34] == struct.pack(">hqqqq", 0, 7, 100, 120, 100)
    assert read_txn_index(path) == ENTRIES


def test_trailing_partial_entry_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    write_txn_index(path, ENTRIES[:2])
    path.write_bytes(path.read_bytes() + b"\x00" * 20)
    assert read_txn_index(path) == ENTRIES[:2]


def test_unknown_version_is_rejected(tmp_path: Path) -> None:
    good = struct.pack(">hqqqq", 0, 1, 2, 3, 4)
    path = write(tmp_path / "x.txnindex", good, struct.pack(">hqqqq", 0x0100, 1, 2, 3, 4))
    with pytest.raises(CorruptIndexError, match="version 1") as err:
        read_txn_index(path)
    assert err.value.position == 34


def test_entry_ending_before_the_segment_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "x.txnindex"
    write_txn_index(path, ENTRIES)
    assert read_txn_index(path, base_offset=100) == ENTRIES
    with pytest.raises(CorruptIndexError, match="before the segment base offset 121"):
        read_txn_index(path, base_offset=121)


def test_collect_aborted() -> None:
    # Overlapping [115, 165): the first three; the third's LSO (200) >= 165 ends the search.
    assert collect_aborted(ENTRIES, 115, 165) == (ENTRIES[:3], True)
    # Nothing reaches LSO 300: incomplete, the next segment must be searched too.
    assert collect_aborted(ENTRIES, 155, 300) == (ENTRIES[2:], False)
    assert collect_aborted(ENTRIES, 0, 100) == ([], True)
    assert collect_aborted([], 0, 100) == ([], False)
