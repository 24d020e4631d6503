"""A partition's remote segments exported: read through the ranged-read path (decrypted,
decompressed) in offset order, the committed records from ``from_offset`` on written as
Parquet as each segment ends (one file per segment and UTC day), under the run's own
directory of the table's data, in the bucket.

The export ends where the tiered data stops deciding: before the first record of a
transaction whose marker is not tiered yet (it may still be aborted), as a read_committed
consumer stops at the last stable offset. The next export starts there.

A run writes only under its own directory, so files a killed run left behind are found and
deleted by the next run of the same export before it writes them again; they are never in the
table, since only the commit registers files. Nothing here writes metadata state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from tierflow.export.rows import Rows, by_day
from tierflow.export.warehouse import DataFiles
from tierflow.kafka.read_committed import (
    OpenTransactions,
    aborted_between,
    committed_batches,
)
from tierflow.lifecycle.remote_log import remote_aborted, segment_batches
from tierflow.rsm import RemoteSegment, RemoteStorageManager


@dataclass(frozen=True)
class ExportedRange:
    """What an export of a partition wrote: its files, and the offsets they cover."""

    partition: int
    first_offset: int
    next_offset: int  # where the next export starts
    files: list[str]
    records: int
    size_in_bytes: int  # of the segments read
    json_failures: int = 0  # with value_json: values that did not parse

    @property
    def empty(self) -> bool:
        return self.next_offset <= self.first_offset


def export_partition(
    rsm: RemoteStorageManager,
    segments: Sequence[RemoteSegment],
    from_offset: int,
    files: DataFiles,
    value_json: bool = False,
) -> ExportedRange:
    """Write the committed records of ``segments`` (in offset order, the first holding
    ``from_offset``) from ``from_offset`` up to the first undecided transaction."""
    aborted = aborted_between(remote_aborted(rsm, segments), segments[0].start_offset, 1 << 62)
    writer = PartitionWriter(segments[0].partition, value_json, files, from_offset)
    batches = writer.open_txns.tracking(remote_batches(rsm, segments, writer.segment_done))
    for batch in committed_batches(batches, aborted):  # one pass: state spans segments
        writer.rows.add(batch, from_offset)
    return writer.exported(segments[-1].end_offset + 1)


class PartitionWriter:
    """A partition's rows written as each segment ends, up to the offset the tiered data has
    decided so far: memory holds a segment's rows, and the rows of transactions still open."""

    def __init__(self, partition: int, value_json: bool, files: DataFiles, from_offset: int):
        self.partition, self.data_files, self.from_offset = partition, files, from_offset
        self.rows, self.open_txns = Rows(partition, value_json), OpenTransactions()
        self.files: list[str] = []
        self.records = self.size_in_bytes = 0

    def segment_done(self, segment: RemoteSegment, size: int) -> None:
        """Every batch of ``segment`` is in: write what is decided."""
        self.size_in_bytes += size
        stable = self.open_txns.stable_offset(segment.end_offset + 1)
        table = self.rows.take(below_offset=stable)
        stem = f"{self.partition}-{segment.start_offset:020d}"
        self.files += write_days(table, self.data_files, stem)
        self.records += table.num_rows

    def exported(self, next_offset: int) -> ExportedRange:
        stable = max(self.open_txns.stable_offset(next_offset), self.from_offset)
        return ExportedRange(
            self.partition,
            self.from_offset,
            stable,
            self.files,
            self.records,
            self.size_in_bytes,
            self.rows.json_failures,
        )


def remote_batches(
    rsm: RemoteStorageManager,
    segments: Sequence[RemoteSegment],
    segment_done: Callable[[RemoteSegment, int], None],
) -> Iterator:
    """The segments' batches in offset order, each segment read whole; ``segment_done`` hears
    of each segment (and its bytes) once its last batch has been consumed."""
    for segment in segments:
        data, batches = segment_batches(rsm, segment)
        yield from batches
        segment_done(segment, len(data))


def write_days(table: object, files: DataFiles, stem: str) -> list[str]:
    """One Parquet file per day of the rows (none for no rows); their URLs."""
    return [
        files.write(f"{stem}-{number}.parquet", day) for number, day in enumerate(by_day(table))
    ]
