"""The Iceberg table of an exported topic, and its commits.

The table is in the export's catalog (``export.catalog``), its files under the bucket's
``iceberg/`` prefix. Spark writes the Parquet files; pyiceberg registers them (``add_files``),
because Spark's Iceberg runtime jar is not installed here.

Each commit records in its snapshot summary the offsets it added per partition, every
partition's end, and the run that added them. The next run starts after the ends of the
current snapshot; a run killed after its commit finds its own run id in the table and does not
commit again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table
from pyiceberg.types import StringType

from tierflow.export.catalog import NAMESPACE, IcebergTarget
from tierflow.export.columns import VALUE_JSON, iceberg_schema, partition_spec
from tierflow.export.segment_export import ExportedRange

OFFSETS = "tierflow.offsets"  # {"<partition>": [first, last], ...}: what the commit added
ENDS = "tierflow.ends"  # {"<partition>": last, ...}: every partition's end after the commit
RUN = "tierflow.run"  # the export run that made the commit
TOPIC = "tierflow.topic"  # table property: the Kafka topic the table exports
# Iceberg's own table properties for snapshot expiry, and their defaults (5 days, keep 1).
MAX_SNAPSHOT_AGE = ("history.expire.max-snapshot-age-ms", 5 * 86_400_000)
MIN_SNAPSHOTS = ("history.expire.min-snapshots-to-keep", 1)


def table_name(topic: str) -> str:
    """A Kafka topic name as an Iceberg table identifier (its dots would read as namespaces)."""
    return f"{NAMESPACE}.{topic.replace('.', '_')}"


def topic_table(target: IcebergTarget, topic: str, value_json: bool = False) -> Table:
    """The topic's table, created with the export's schema and partitioning if missing (in
    the bucket, whatever the catalog's own warehouse); given the ``value_json`` column when
    the topic's value format turned to json since."""
    catalog, name = target.catalog, table_name(topic)
    try:
        table = catalog.load_table(name)
    except NoSuchTableError:
        return catalog.create_table_if_not_exists(
            name,
            schema=iceberg_schema(value_json),
            partition_spec=partition_spec(),
            location=target.warehouse.table_location(*name.split(".")),
            properties={TOPIC: topic},
        )
    if value_json and VALUE_JSON not in table.schema().column_names:
        with table.update_schema() as update:
            update.add_column(VALUE_JSON, StringType(), doc="the value, parsed as JSON")
        table = table.refresh()
    return table


def existing_table(catalog: Catalog, topic: str) -> Table | None:
    """The topic's table if an export created it (a dry run or a status creates nothing)."""
    try:
        return catalog.load_table(table_name(topic))
    except NoSuchTableError:
        return None


def committed_ends(table: Table | None) -> dict[int, int]:
    """The highest offset committed per partition. Each commit carries every partition's end
    (ENDS), so the current snapshot alone knows them, older snapshots expired or not."""
    current = table.current_snapshot() if table is not None else None
    if current is None or current.summary is None:
        return {}
    return {int(p): last for p, last in json.loads(current.summary.get(ENDS) or "{}").items()}


def committed_runs(table: Table) -> set[str]:
    return {s.summary[RUN] for s in table.snapshots() if s.summary and RUN in s.summary}


def commit_files(table: Table, exported: Sequence[ExportedRange], *, run: str) -> bool:
    """Register the run's files with the offsets they cover, once: False when the run had
    committed already (killed after its commit, then rerun) or added nothing."""
    ranges = [e for e in exported if not e.empty]
    if not ranges or run in committed_runs(table):
        return False
    added = {str(e.partition): [e.first_offset, e.next_offset - 1] for e in ranges}
    ends = committed_ends(table) | {e.partition: e.next_offset - 1 for e in ranges}
    files = [f for e in ranges for f in e.files]
    summary = {OFFSETS: json.dumps(added), ENDS: json.dumps(ends), RUN: run}
    table.add_files(files, snapshot_properties=summary)
    return True


def expire_snapshots(table: Table, now_ms: int) -> int:
    """Expire the snapshots older than the table's max snapshot age (Iceberg's property, 5
    days by default), keeping its minimum count and the current one; how many expired.
    The data files stay: every commit only adds files, so the current snapshot holds them."""
    properties = table.properties
    max_age = int(properties.get(MAX_SNAPSHOT_AGE[0], MAX_SNAPSHOT_AGE[1]))
    keep = int(properties.get(MIN_SNAPSHOTS[0], MIN_SNAPSHOTS[1]))
    snapshots = sorted(table.snapshots(), key=lambda s: s.timestamp_ms)
    current = table.current_snapshot()
    current_id = current.snapshot_id if current is not None else None
    old = [
        s.snapshot_id
        for s in snapshots[: max(0, len(snapshots) - keep)]
        if s.timestamp_ms < now_ms - max_age and s.snapshot_id != current_id
    ]
    if old:
        table.maintenance.expire_snapshots().by_ids(old).commit()
    return len(old)
