"""Tiered segments exported to an Iceberg table (SQL catalog, local warehouse) and read back
with pyiceberg: each partition's rows are the records kafka-python reads from the broker's own
segments, less the control records and those of aborted transactions, decided here the other
way round, from each transactional batch's next marker. Exports add exactly the new offsets,
and a run committed once is never committed again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.iceberg_rows import expected_rows, table_rows
from tests.support.restored import finished_rows
from tests.support.tiered import Tiered, copied_by_cli
from tierflow.export.catalog import IcebergTarget, open_catalog
from tierflow.export.segment_export import export_partition
from tierflow.export.table import commit_files, committed_ends, expire_snapshots, topic_table
from tierflow.export.warehouse import DataFiles, Warehouse
from tierflow.kafka.log_dir import PartitionLog
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.segment_refs import remote_segment
from tierflow.storage.factory import open_object_store


@pytest.fixture(scope="module")
def tiered(tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    return copied_by_cli(tmp_path_factory.mktemp("tiered"))


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
    rows = finished_rows(t.store, log_)
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
    rows = finished_rows(t.store, log_)
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
