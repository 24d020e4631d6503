"""A compacted segment's tail as a segment of its own: the batches from an offset on, byte for
byte, with the segment's indexes rebased to the slice (what the copy of a segment the cleaner
merged across the remote boundary uploads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.kafka.log_builders import SAMPLES, v2_batch, write
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition, write_offset_index
from tierflow.kafka.record_batch import iter_batches, iter_batches_in_buffer
from tierflow.kafka.segment import LogSegment
from tierflow.kafka.segment_slice import slice_segment
from tierflow.kafka.time_index import TimeIndex, TimestampOffset, write_time_index
from tierflow.kafka.txn_index import AbortedTxn, txn_index_entries, write_txn_index

# A compacted segment at 100: offsets missing between batches, and inside the last one's run.
BATCHES = [(100, 3), (110, 2), (130, 5), (141, 1), (160, 4)]


def compacted_segment(directory: Path) -> LogSegment:
    segment = LogSegment(100, directory)
    chunks = [v2_batch(base, count, timestamp=1_000 + base) for base, count in BATCHES]
    write(segment.log_path, *chunks)
    positions = [h.position for h in iter_batches(segment.log_path)]
    entries = [OffsetPosition(b, p) for (b, _), p in zip(BATCHES, positions, strict=True)]
    write_offset_index(segment.index_path, 100, entries)
    stamps = [TimestampOffset(1_000 + b + n - 1, b + n - 1) for b, n in BATCHES]
    write_time_index(segment.time_index_path, 100, stamps)
    write_txn_index(
        segment.txn_index_path, [AbortedTxn(7, 100, 112, 100), AbortedTxn(8, 131, 141, 131)]
    )
    return segment


def test_the_slice_is_the_batches_from_the_offset_on_with_rebased_indexes(tmp_path: Path) -> None:
    segment = compacted_segment(tmp_path)
    cut = slice_segment(segment, 120)
    data = segment.log_path.read_bytes()
    assert cut.base_offset == 120 and cut.size_in_bytes == len(data) - cut.position
    kept = data[cut.position :]
    batches = list(iter_batches_in_buffer(kept, source="slice"))
    assert [(b.base_offset, b.last_offset) for b in batches] == [(130, 134), (141, 141), (160, 163)]
    index = OffsetIndex.from_bytes(cut.offset_index, 120, source="slice", log_size=len(kept))
    assert [(e.offset, e.position) for e in index.entries] == [
        (b.base_offset, b.position) for b in batches
    ]
    times = TimeIndex.from_bytes(cut.time_index, 120, source="slice")
    assert [e.offset for e in times.entries] == [134, 141, 163]
    aborted = txn_index_entries(cut.txn_index, "slice")
    assert [t.producer_id for t in aborted] == [8], "a transaction ended before 120 is not in it"


def test_a_slice_from_a_batch_start_or_past_the_end(tmp_path: Path) -> None:
    segment = compacted_segment(tmp_path)
    assert slice_segment(segment, 100).position == 0
    past = slice_segment(segment, 200)
    assert past.size_in_bytes == 0 and past.offset_index == b"" and past.time_index == b""


def test_an_offset_inside_a_batch_is_refused_naming_file_and_position(tmp_path: Path) -> None:
    segment = compacted_segment(tmp_path)
    with pytest.raises(KafkaFormatError, match="batch 130-134 spans offset 132") as raised:
        slice_segment(segment, 132)
    assert str(segment.log_path) in str(raised.value)


def test_a_real_brokers_cleaned_segment(tmp_path: Path) -> None:
    """Kafka 2.7's cleaned __consumer_offsets-39: each slice holds exactly the batches at or
    above its offset, byte for byte."""
    partition = SAMPLES / "DonaldY__kafka-2.7.1" / "kafka-logs" / "__consumer_offsets-39"
    if not partition.is_dir():
        pytest.skip("../shared/kafka-samples is not present beside the checkout")
    segment = LogSegment(0, partition)
    headers = list(iter_batches(segment.log_path))
    data = segment.log_path.read_bytes()
    for header in headers:
        cut = slice_segment(segment, header.base_offset)
        assert data[cut.position :] == data[header.position :]
