"""Tiered segments exported to an Iceberg table (SQL catalog, local warehouse) and read back
with pyiceberg: each partition's rows are the records kafka-python reads from the broker's own
segments, less the control records and those of aborted transactions, decided here the other
way round, from each transactional batch's next marker. Exports add exactly the new offsets,
and a run committed once is never committed again."""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa
import pytest

from tests.restore.test_restore_partition import finished
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli import main
from tierflow.export.catalog import IcebergTarget, open_catalog
from tierflow.export.segment_export import export_partition
from tierflow.export.table import commit_files, committed_ends, expire_snapshots, topic_table
from tierflow.export.warehouse import DataFiles, Warehouse
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.read_committed import kafka_python_batches
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.segment_refs import remote_segment
from tierflow.storage.factory import open_object_store

COLUMNS = ("partition", "offset", "timestamp", "key", "value", "headers")


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    t = build_tiered(tmp_path_factory.mktemp("tiered"), layout="chunked-encrypted")
    with pytest.MonkeyPatch.context() as monkeypatch:
        use_settings(monkeypatch, t.settings)
        assert main(["copy", "--owner", "test"]) == 0
    return t


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


def local_target(t: Tiered, bucket: Path) -> IcebergTarget:
    """The store's SQL catalog over a warehouse in ``bucket``, a directory of its own."""
    warehouse = Warehouse.of(str(bucket))
    catalog = open_catalog(t.settings.db_url, warehouse.location)
    return IcebergTarget(catalog, warehouse, open_object_store(str(bucket)))


def export(t: Tiered, target: IcebergTarget, log_: PartitionLog, rows: list, start: int, run: str):
    """Export ``rows`` (segment rows) from offset ``start``: the files and the range."""
    topic = t.store.topic(log_.topic)
    segments = [remote_segment(topic, row) for row in rows]
    files = DataFiles(target.objects, f"runs/{run}", target.warehouse.url(f"runs/{run}"))
    return export_partition(t.rsm, segments, start, files)


def test_an_export_holds_the_committed_records_and_adds_only_new_offsets(
    tiered: Tiered, tmp_path: Path
) -> None:
    t, log_ = tiered, tiered.log("orders", 0)
    target = local_target(t, tmp_path)
    catalog, table = target.catalog, topic_table(target, kafka_topic_name(log_.topic))
    rows = finished(t.store, log_)
    assert len(rows) >= 2
    one = export(t, target, log_, rows[:1], rows[0].start_offset, "run-1")
    assert commit_files(table, [one], run="run-1")
    assert committed_ends(table.refresh()) == {0: one.next_offset - 1}
    later = [r for r in rows if r.end_offset >= one.next_offset]
    two = export(t, target, log_, later, one.next_offset, "run-2")
    assert two.first_offset == one.next_offset, "the second export starts where the first ended"
    assert commit_files(table, [two], run="run-2")
    assert not commit_files(table.refresh(), [two], run="run-2"), "a run commits once"
    table = catalog.load_table(table.name())
    assert committed_ends(table) == {0: two.next_offset - 1}
    got = table_rows(table.scan().to_arrow(), 0)
    assert got == expected_rows(log_, below=two.next_offset)
    assert len({offset for _, offset, *_ in got}) == len(got), "no offset twice"
    # orders-0's last tiered segment holds a transaction aborted by a marker still local:
    # the export stops before it, as a read_committed consumer stops at the stable offset.
    assert two.next_offset <= rows[-1].end_offset


def test_old_snapshots_expire_and_the_ends_stay(tiered: Tiered, tmp_path: Path) -> None:
    t, log_ = tiered, tiered.log("orders", 0)
    target = local_target(t, tmp_path)
    catalog, table = target.catalog, topic_table(target, "expiring")
    rows = finished(t.store, log_)
    start = rows[0].start_offset
    for number in range(1, len(rows) + 1):  # one more segment tiered before each run
        tiered_now = [r for r in rows[:number] if r.end_offset >= start]
        done = export(t, target, log_, tiered_now, start, f"r{number}")
        assert commit_files(table, [done], run=f"r{number}") or done.empty
        table, start = table.refresh(), done.next_offset
    ends, count = committed_ends(table), len(table.snapshots())
    assert count >= 2
    assert expire_snapshots(table, now_ms=0) == 0, "none is five days old"
    assert expire_snapshots(table.refresh(), now_ms=1 << 50) == count - 1, "all but the current"
    table = catalog.load_table(table.name())
    assert len(table.snapshots()) == 1 and committed_ends(table) == ends
    assert table_rows(table.scan().to_arrow(), 0) == expected_rows(log_, below=ends[0] + 1)
