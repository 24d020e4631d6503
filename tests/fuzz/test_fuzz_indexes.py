"""Properties of the .index, .timeindex and .txnindex readers and writers."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tests.fuzz.support import assert_names_file, counted, scratch_file, valid_or_mutated
from tierflow.kafka.errors import CorruptIndexError
from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition, offset_index_bytes
from tierflow.kafka.time_index import TimeIndex, TimestampOffset, time_index_bytes
from tierflow.kafka.txn_index import AbortedTxn, read_txn_index, txn_index_bytes

INT32_MAX = 2**31 - 1
INT64 = st.integers(-(2**63), 2**63 - 1)
base_offsets = st.integers(0, 2**40)


@st.composite
def offset_indexes(draw: st.DrawFn) -> tuple[int, list[OffsetPosition]]:
    """Strictly ascending offsets, non-decreasing positions, as Kafka appends them."""
    base = draw(base_offsets)
    relatives = sorted(draw(st.sets(st.integers(0, INT32_MAX), max_size=12)))
    positions = sorted(draw(st.lists(st.integers(0, INT32_MAX), min_size=len(relatives))))
    return base, [OffsetPosition(base + r, p) for r, p in zip(relatives, positions, strict=False)]


@st.composite
def time_indexes(draw: st.DrawFn) -> tuple[int, list[TimestampOffset]]:
    base = draw(base_offsets)
    count = draw(st.integers(0, 12))
    stamps = sorted(draw(st.lists(INT64, min_size=count, max_size=count)))
    relatives = sorted(draw(st.lists(st.integers(0, INT32_MAX), min_size=count, max_size=count)))
    return base, [TimestampOffset(t, base + r) for t, r in zip(stamps, relatives, strict=True)]


aborted_txns = st.builds(
    AbortedTxn,
    producer_id=INT64,
    first_offset=INT64,
    last_offset=INT64,
    last_stable_offset=INT64,
    version=st.just(0),
)


def _offset_index_bytes(case: tuple[int, list[OffsetPosition]]) -> bytes:
    base, entries = case
    return offset_index_bytes(base, [e for e in entries if e != OffsetPosition(base, 0)])


def _time_index_bytes(case: tuple[int, list[TimestampOffset]]) -> bytes:
    base, entries = case
    return time_index_bytes(base, [e for e in entries if e != TimestampOffset(0, base)])


@given(offset_indexes())
@example((0, [OffsetPosition(0, 0)]))
@counted
def test_offset_index_round_trip(case: tuple[int, list[OffsetPosition]]) -> None:
    """Found the writer accepting a lone (base offset, position 0) entry that read back as []."""
    base, entries = case
    if entries and entries[-1] == OffsetPosition(base, 0):
        with pytest.raises(ValueError, match="preallocated tail"):
            offset_index_bytes(base, entries)
        return
    path = scratch_file("round.index", offset_index_bytes(base, entries))
    assert OffsetIndex.read(path, base).entries == entries


@given(valid_or_mutated(offset_indexes().map(_offset_index_bytes)), base_offsets)
@counted
def test_offset_index_any_bytes(data: bytes, base: int) -> None:
    """Either an index that keeps Kafka's invariants or CorruptIndexError naming the file."""
    path = scratch_file("any.index", data)
    try:
        index = OffsetIndex.read(path, base, log_size=2**31)
    except CorruptIndexError as exc:
        assert_names_file(exc, path)
        return
    offsets = [e.offset for e in index.entries]
    positions = [e.position for e in index.entries]
    assert offsets == sorted(set(offsets)) and positions == sorted(positions)
    assert all(o >= base for o in offsets) and all(p >= 0 for p in positions)
    assert index.to_bytes() == data[: len(index.entries) * 8]


@given(time_indexes())
@example((7, [TimestampOffset(-3, 7), TimestampOffset(0, 7)]))
@counted
def test_time_index_round_trip(case: tuple[int, list[TimestampOffset]]) -> None:
    base, entries = case
    if entries and entries[-1] == TimestampOffset(0, base):
        with pytest.raises(ValueError, match="preallocated tail"):
            time_index_bytes(base, entries)
        return
    path = scratch_file("round.timeindex", time_index_bytes(base, entries))
    assert TimeIndex.read(path, base).entries == entries


@given(valid_or_mutated(time_indexes().map(_time_index_bytes)), base_offsets)
@counted
def test_time_index_any_bytes(data: bytes, base: int) -> None:
    path = scratch_file("any.timeindex", data)
    try:
        index = TimeIndex.read(path, base)
    except CorruptIndexError as exc:
        assert_names_file(exc, path)
        return
    stamps = [e.timestamp for e in index.entries]
    offsets = [e.offset for e in index.entries]
    assert stamps == sorted(stamps) and offsets == sorted(offsets)
    assert all(o >= base for o in offsets)
    assert index.to_bytes() == data[: len(index.entries) * 12]


@given(st.lists(aborted_txns, max_size=8))
@counted
def test_txn_index_round_trip(entries: list[AbortedTxn]) -> None:
    path = scratch_file("round.txnindex", txn_index_bytes(entries))
    assert read_txn_index(path) == entries


@given(valid_or_mutated(st.lists(aborted_txns, max_size=6).map(txn_index_bytes)))
@counted
def test_txn_index_any_bytes(data: bytes) -> None:
    """Whole entries are read back exactly; a partial last entry is ignored, as in Kafka."""
    path = scratch_file("any.txnindex", data)
    try:
        entries = read_txn_index(path, base_offset=0)
    except CorruptIndexError as exc:
        assert_names_file(exc, path)
        return
    assert len(entries) == len(data) // 34
    assert txn_index_bytes(entries) == data[: len(entries) * 34]
    assert all(e.last_offset >= 0 for e in entries)


@given(st.binary(max_size=100), st.booleans())
@counted
def test_index_from_bytes_names_source(data: bytes, time_index: bool) -> None:
    """Remote index bytes are checked the same way, and errors name the object key."""
    reader = TimeIndex.from_bytes if time_index else OffsetIndex.from_bytes
    try:
        reader(data, 0, source="bucket/key.indexes")
    except CorruptIndexError as exc:
        assert exc.path == "bucket/key.indexes"
