"""Remote segments' committed records as Arrow rows, one per record, and those rows cut into
one table per day: each Parquet file the export writes holds one Kafka partition and one day,
which is what lets Iceberg register it in a partitioned table without rewriting it."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

from tierflow.export.columns import VALUE_JSON, arrow_schema

TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
NO_TIMESTAMP = -1


class Rows:
    """Arrow columns filled batch by batch."""

    def __init__(self, partition: int, value_json: bool = False) -> None:
        self.partition = partition
        self.schema = arrow_schema(value_json)
        self.columns: dict[str, list] = {field.name: [] for field in self.schema}
        self.carried = self.schema.empty_table()  # rows a take left for later
        self.json_failures = 0  # values that did not parse as JSON (their value_json: null)

    def add(self, batch: object, from_offset: int = 0) -> None:
        """The batch's records at or after ``from_offset``; what the batch says once for all
        its records (a v2 batch's timestamp type, producer, epoch) is read once."""
        records = [r for r in batch if r.offset >= from_offset]
        if not records:
            return
        v2 = batch.magic >= 2
        shared = {
            "partition": self.partition,
            "base_offset": batch.base_offset,
            "leader_epoch": batch.leader_epoch if v2 else None,
            "producer_id": batch.producer_id if v2 else None,
            "is_transactional": batch.is_transactional if v2 else False,
        }
        for name, value in shared.items():
            self.columns[name].extend([value] * len(records))
        timestamps = [r.timestamp for r in records]
        kinds = [batch.timestamp_type] * len(records) if v2 else [r.timestamp_type for r in records]
        for timestamp, kind in zip(timestamps, kinds, strict=True):
            known = timestamp is not None and timestamp != NO_TIMESTAMP
            self.columns["timestamp"].append(timestamp * 1000 if known else None)
            self.columns["timestamp_type"].append(TIMESTAMP_TYPES.get(kind) if known else None)
        self._add_records(records, v2)

    def _add_records(self, records: list, v2: bool) -> None:
        """Offsets, keys, values, headers (kafka-python's (key, value) tuples fill the header
        structs as they are) and the parsed values."""
        self.columns["offset"].extend(r.offset for r in records)
        self.columns["key"].extend(r.key for r in records)
        self.columns["value"].extend(r.value for r in records)
        self.columns["headers"].extend(r.headers if v2 else None for r in records)
        if VALUE_JSON in self.columns:
            self.columns[VALUE_JSON].extend(self._json(r.value) for r in records)

    def _json(self, value: bytes | None) -> str | None:
        """The value parsed as JSON, written back compactly; None for no value or bad JSON."""
        if value is None:
            return None
        try:
            return json.dumps(json.loads(value), separators=(",", ":"), ensure_ascii=False)
        except ValueError:
            self.json_failures += 1
            return None

    def table(self, below_offset: int | None = None) -> pa.Table:
        """The rows, those at or after ``below_offset`` left out."""
        table = pa.concat_tables([self.carried, pa.Table.from_pydict(self.columns, self.schema)])
        if below_offset is None:
            return table
        return table.filter(pc.less(table["offset"], below_offset))

    def take(self, below_offset: int) -> pa.Table:
        """The rows below ``below_offset``, removed; the others stay for the next take."""
        table = self.table()
        self.columns = {name: [] for name in self.columns}
        self.carried = table.filter(pc.greater_equal(table["offset"], below_offset))
        return table.filter(pc.less(table["offset"], below_offset))


def by_day(table: pa.Table) -> list[pa.Table]:
    """The rows cut by UTC day of their timestamp (rows without one together), in order."""
    if table.num_rows == 0:
        return []
    days = pc.floor_temporal(table["timestamp"], unit="day")
    tables = []
    for day in pc.unique(days).to_pylist():
        mask = pc.is_null(days) if day is None else pc.equal(days, pa.scalar(day, days.type))
        tables.append(table.filter(pc.fill_null(mask, False)))
    return tables
