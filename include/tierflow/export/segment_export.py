"""A partition's remote segments exported: read through the ranged-read path (decrypted,
decompressed) in offset order, the committed records from ``from_offset`` on written as
Parquet, one file per UTC day, under the run's own directory of the table's data.

The export ends where the tiered data stops deciding: before the first record of a
transaction whose marker is not tiered yet (it may still be aborted), as a read_committed
consumer stops at the last stable offset. The next export starts there.

A run writes only under its own directory, so files a killed run left behind are found and
deleted by the next run of the same export before it writes them again; they are never in the
table, since only the commit registers files. Nothing here writes metadata state.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from tierflow.export.committed import (
    OpenTransactions,
    aborted_between,
    committed_batches,
    kafka_python_batches,
)
from tierflow.export.rows import Rows, by_day
from tierflow.kafka.txn_index import AbortedTxn, txn_index_entries
from tierflow.rsm import IndexType, RemoteResourceNotFoundError, RemoteSegment, RemoteStorageManager


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
    run_dir: Path,
    value_json: bool = False,
) -> ExportedRange:
    """Write the committed records of ``segments`` (in offset order, the first holding
    ``from_offset``) from ``from_offset`` up to the first undecided transaction."""
    aborted = aborted_between(remote_aborted(rsm, segments), segments[0].start_offset, 1 << 62)
    open_txns, rows, sizes = OpenTransactions(), Rows(segments[0].partition, value_json), []
    batches = open_txns.tracking(remote_batches(rsm, segments, sizes))
    for batch in committed_batches(batches, aborted):  # one pass: state spans segments
        rows.add(batch, from_offset)
    stable = open_txns.stable_offset(segments[-1].end_offset + 1)
    table = rows.table(below_offset=stable)
    files = write_days(table, run_dir, f"{segments[0].partition}-{from_offset:020d}")
    return ExportedRange(
        segments[0].partition,
        from_offset,
        max(stable, from_offset),
        files,
        table.num_rows,
        sum(sizes),
        rows.json_failures,
    )


def remote_batches(
    rsm: RemoteStorageManager, segments: Sequence[RemoteSegment], sizes: list[int]
) -> Iterator:
    """The segments' batches in offset order, each segment read whole; ``sizes`` hears of
    each segment's bytes."""
    for segment in segments:
        data = b"".join(rsm.iter_log_segment(segment))
        sizes.append(len(data))
        yield from kafka_python_batches(data)


def write_days(table: object, run_dir: Path, stem: str) -> list[str]:
    """One Parquet file per day of the rows."""
    run_dir.mkdir(parents=True, exist_ok=True)
    files = []
    for number, day in enumerate(by_day(table)):
        path = run_dir / f"{stem}-{number}.parquet"
        pq.write_table(day, path)
        files.append(str(path))
    return files


def remote_aborted(
    rsm: RemoteStorageManager, segments: Sequence[RemoteSegment]
) -> list[AbortedTxn]:
    """The aborted transactions indexed by the segments (their remote ``.txnindex``): given a
    segment and every later one, all that a read_committed fetch of the segment needs."""
    aborted: list[AbortedTxn] = []
    for segment in segments:
        try:
            data = rsm.fetch_index(segment, IndexType.TRANSACTION)
        except RemoteResourceNotFoundError:
            continue  # Kafka creates the file lazily: no abort in this segment
        aborted.extend(txn_index_entries(data, f"{segment.describe()} transaction index"))
    return aborted
