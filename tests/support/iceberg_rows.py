"""The rows an Iceberg export must hold, read from the broker's own segments, and the check
that a table holds them; shared by the export tests (library, CLI, Airflow, S3)."""

from __future__ import annotations

import struct

import pyarrow as pa

from tierflow.export.table import committed_ends
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.read_committed import kafka_python_batches

COLUMNS = ("partition", "offset", "timestamp", "key", "value", "headers")


def expected_rows(log_: PartitionLog, below: int) -> list[tuple]:
    """The committed records below offset ``below``, from the local segments and markers."""
    batches = [b for s in log_.segments() for b in kafka_python_batches(s.log_path.read_bytes())]
    markers = {i: _marker(b) for i, b in enumerate(batches) if b.is_control_batch}
    rows = []
    for i, batch in enumerate(batches):
        if batch.base_offset >= below or batch.is_control_batch:
            continue
        if batch.is_transactional and _aborted(batch, i, batches, markers):
            continue
        for r in (r for r in batch if r.offset < below):
            headers = [{"key": k, "value": v} for k, v in r.headers]
            rows.append((log_.partition, r.offset, r.timestamp, r.key, r.value, headers))
    return rows


def _marker(batch: object) -> int:
    """A control batch's type: 0 ABORT, 1 COMMIT (its one record's key)."""
    (record,) = list(batch)
    return struct.unpack_from(">hh", record.key)[1]


def _aborted(batch: object, at: int, batches: list, markers: dict[int, int]) -> bool:
    """Whether the next marker of the batch's producer aborts its transaction."""
    for i in range(at + 1, len(batches)):
        if i in markers and batches[i].producer_id == batch.producer_id:
            return markers[i] == 0
    raise AssertionError(f"no marker for the transaction at offset {batch.base_offset}")


def table_rows(table: pa.Table, partition: int) -> list[tuple]:
    rows = table.filter(pa.compute.equal(table["partition"], partition)).sort_by("offset")
    return [
        (r["partition"], r["offset"], int(r["timestamp"].timestamp() * 1000), *_rest(r))
        for r in rows.select(list(COLUMNS)).to_pylist()
    ]


def assert_holds_committed(table: object, logs: list[PartitionLog]) -> dict[int, int]:
    """The table holds each partition's committed records up to its committed end, and those
    ends; for export tests that go through the CLI or Airflow."""
    ends = committed_ends(table)
    assert sorted(ends) == sorted(log_.partition for log_ in logs)
    rows = table.scan().to_arrow()
    for log_ in logs:
        want = expected_rows(log_, below=ends[log_.partition] + 1)
        assert table_rows(rows, log_.partition) == want, f"{log_.topic}-{log_.partition}"
    return ends


def _rest(row: dict) -> tuple:
    return row["key"], row["value"], row["headers"]
