"""The exported table's columns, once for Arrow (what Spark's tasks write as Parquet) and once
for Iceberg (the table's schema, partitioned by Kafka partition and by day of the timestamp).

One row per record. ``timestamp`` is the record's, in UTC; ``timestamp_type`` is Kafka's name
for how it was set (``CreateTime`` or ``LogAppendTime``); legacy (v0) records have neither a
timestamp nor headers, and so have nulls there.
"""

from __future__ import annotations

import pyarrow as pa
from pyiceberg.partitioning import PartitionField, PartitionSpec
from pyiceberg.schema import Schema
from pyiceberg.transforms import DayTransform, IdentityTransform
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    IntegerType,
    ListType,
    LongType,
    NestedField,
    StringType,
    StructType,
    TimestamptzType,
)

HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])
VALUE_JSON = "value_json"  # with tierflow.iceberg.value.format=json: the value, parsed
ARROW_SCHEMA = pa.schema(
    [
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestamp_type", pa.string()),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.list_(HEADER)),
        pa.field("leader_epoch", pa.int32()),
        pa.field("producer_id", pa.int64()),
        pa.field("is_transactional", pa.bool_()),
        pa.field("base_offset", pa.int64(), nullable=False),
    ]
)


def arrow_schema(value_json: bool = False) -> pa.Schema:
    """The Parquet files' columns; ``value_json`` adds the parsed value as JSON text."""
    return ARROW_SCHEMA.append(pa.field(VALUE_JSON, pa.string())) if value_json else ARROW_SCHEMA


def iceberg_schema(value_json: bool = False) -> Schema:
    """ARROW_SCHEMA with Iceberg's field ids (1-11, the headers' element and fields 12-14, the
    value's JSON 15)."""
    header = StructType(
        NestedField(13, "key", StringType(), required=False),
        NestedField(14, "value", BinaryType(), required=False),
    )
    fields = [
        NestedField(1, "partition", IntegerType(), required=True),
        NestedField(2, "offset", LongType(), required=True),
        NestedField(3, "timestamp", TimestamptzType(), required=False),
        NestedField(4, "timestamp_type", StringType(), required=False),
        NestedField(5, "key", BinaryType(), required=False),
        NestedField(6, "value", BinaryType(), required=False),
        NestedField(7, "headers", ListType(12, header, element_required=False), required=False),
        NestedField(8, "leader_epoch", IntegerType(), required=False),
        NestedField(9, "producer_id", LongType(), required=False),
        NestedField(10, "is_transactional", BooleanType(), required=False),
        NestedField(11, "base_offset", LongType(), required=True),
    ]
    if value_json:
        fields.append(NestedField(15, VALUE_JSON, StringType(), required=False))
    return Schema(*fields)


def partition_spec() -> PartitionSpec:
    """By Kafka partition, then by day of the record's timestamp."""
    return PartitionSpec(
        PartitionField(1, 1000, IdentityTransform(), "partition"),
        PartitionField(3, 1001, DayTransform(), "timestamp_day"),
    )
