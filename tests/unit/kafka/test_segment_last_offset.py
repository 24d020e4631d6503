"""A segment's last offset (the log end of a partition's active segment) starts its walk at the
offset index's last entry, as Kafka's ``LogSegment.readNextOffset`` does, and trusts that entry
only as far as the log bears it out. The oracle is kafka-python reading the whole ``.log``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from tests.unit.kafka.log_builders import GZIP, legacy_message_set, v2_batch, write
from tierflow.kafka.errors import CorruptRecordError, TruncatedDataError
from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition, offset_index_bytes
from tierflow.kafka.segment import LogSegment

BASE = 500
PREALLOCATED = 1 << 20  # zeros after the entries, as an active segment's index has them


def kafka_python_last_offset(log: Path) -> int:
    """The last record's offset: a v2 batch's header says it, a legacy message set is read."""
    records, last = MemoryRecords(log.read_bytes()), None
    while (batch := records.next_batch()) is not None:
        last = batch.last_offset if batch.magic == 2 else [r.offset for r in batch][-1]
    assert last is not None
    return last


def segment(tmp_path: Path, batches: int = 40) -> tuple[LogSegment, list[OffsetPosition]]:
    """A segment of ``batches`` batches of 3 records, and an index entry per batch (Kafka's
    entry: the batch's last offset at its position)."""
    chunks, entries, position = [], [], 0
    for i in range(batches):
        chunk = v2_batch(BASE + 3 * i, 3)
        entries.append(OffsetPosition(BASE + 3 * i + 2, position))
        chunks.append(chunk)
        position += len(chunk)
    write(tmp_path / f"{BASE:020d}.log", *chunks)
    return LogSegment(BASE, tmp_path), entries


def index(seg: LogSegment, entries: list[OffsetPosition], tail: int = PREALLOCATED) -> None:
    seg.index_path.write_bytes(offset_index_bytes(BASE, entries) + bytes(tail))


@pytest.mark.parametrize("every", [1, 7, 40], ids=lambda n: f"an entry every {n} batches")
def test_the_walk_from_the_last_index_entry_ends_where_kafka_python_ends(
    tmp_path: Path, every: int
) -> None:
    seg, entries = segment(tmp_path)
    index(seg, entries[every - 1 :: every])
    assert seg.last_offset() == kafka_python_last_offset(seg.log_path) == BASE + 3 * 40 - 1


def test_it_reads_no_batch_before_the_last_index_entry(tmp_path: Path) -> None:
    seg, entries = segment(tmp_path)
    log = bytearray(seg.log_path.read_bytes())
    log[16] = 9  # the first batch's magic: a walk from byte 0 refuses the log here
    seg.log_path.write_bytes(bytes(log))
    with pytest.raises(CorruptRecordError, match="unknown magic byte 9"):
        seg.last_offset()  # no index: the whole walk, which names the fault
    index(seg, entries[::10])
    assert seg.last_offset() == BASE + 3 * 40 - 1


@pytest.mark.parametrize(
    "bad",
    [
        OffsetPosition(BASE + 200, 10**9),  # past the log's end (a log cut short by a crash)
        OffsetPosition(BASE + 59, 7),  # inside the first batch, not at a batch
        OffsetPosition(BASE + 9_000, 0),  # at a batch that does not hold its offset
    ],
    ids=["past the end", "not at a batch", "offset not in the batch"],
)
def test_an_entry_the_log_does_not_bear_out_is_not_trusted(
    tmp_path: Path, bad: OffsetPosition
) -> None:
    seg, _ = segment(tmp_path)
    index(seg, [bad], tail=0)
    assert seg.last_offset() == kafka_python_last_offset(seg.log_path)


def test_an_entry_at_a_batch_that_does_not_hold_its_offset_is_not_trusted(tmp_path: Path) -> None:
    seg, entries = segment(tmp_path)
    index(seg, [OffsetPosition(BASE + 9_000, entries[1].position)], tail=0)
    assert seg.last_offset() == kafka_python_last_offset(seg.log_path)


@pytest.mark.parametrize("tail", [0, PREALLOCATED], ids=["trimmed", "preallocated"])
def test_the_last_index_entry_is_the_last_one_written(tmp_path: Path, tail: int) -> None:
    """Oracle: the whole index read and checked (OffsetIndex.read, trimmed of its zeros)."""
    seg, entries = segment(tmp_path)
    index(seg, entries[::3], tail)
    whole = OffsetIndex.read(seg.index_path, BASE)
    assert OffsetIndex.last_entry(seg.index_path, BASE) == whole.entries[-1] == entries[::3][-1]


def test_an_empty_segment_has_no_last_offset(tmp_path: Path) -> None:
    write(tmp_path / f"{BASE:020d}.log")
    seg = LogSegment(BASE, tmp_path)
    index(seg, [])
    assert seg.last_offset() is None


@pytest.mark.parametrize("indexed", [False, True], ids=["no index", "indexed"])
def test_a_crc_mismatch_is_no_fault_of_the_offsets(tmp_path: Path, indexed: bool) -> None:
    """The log end reads offsets, not records: a damaged record in the last batch leaves its
    offsets as they were (kafka-python reads them without a CRC check too)."""
    seg, entries = segment(tmp_path)
    log = bytearray(seg.log_path.read_bytes())
    log[-5] ^= 0xFF  # a byte of the last batch's last record
    seg.log_path.write_bytes(bytes(log))
    if indexed:
        index(seg, entries[::10])
    assert seg.last_offset() == kafka_python_last_offset(seg.log_path) == BASE + 3 * 40 - 1


@pytest.mark.parametrize("indexed", [False, True], ids=["no index", "indexed"])
def test_a_batch_cut_short_at_the_end_is_named(tmp_path: Path, indexed: bool) -> None:
    seg, entries = segment(tmp_path)
    log = seg.log_path.read_bytes()
    seg.log_path.write_bytes(log[:-10])
    if indexed:
        index(seg, entries[::10])
    with pytest.raises(TruncatedDataError, match=str(seg.log_path)):
        seg.last_offset()


@pytest.mark.parametrize(("magic", "codec"), [(0, 0), (1, 0), (1, GZIP)])
def test_legacy_messages_end_where_kafka_python_ends(
    tmp_path: Path, magic: int, codec: int
) -> None:
    sets = [legacy_message_set(magic, BASE + 5 * i, 5, codec=codec) for i in range(6)]
    write(tmp_path / f"{BASE:020d}.log", *sets)
    seg = LogSegment(BASE, tmp_path)
    assert seg.last_offset() == kafka_python_last_offset(seg.log_path) == BASE + 29
