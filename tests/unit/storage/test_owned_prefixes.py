"""The registry of what tierflow owns in the bucket: every key tierflow writes has an owner, the
owner whose rule must judge it, and keys outside are nobody's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tierflow.config import InvalidSettingError
from tierflow.export.table import table_name
from tierflow.export.warehouse import Warehouse
from tierflow.ids import new_kafka_uuid
from tierflow.storage.keys import segment_key
from tierflow.storage.owned_prefixes import WAREHOUSE_DIR, BucketLayout, Owner
from tierflow.storage.wal_keys import new_wal_object_key

TOPIC_ID = new_kafka_uuid()


def segment(prefix: str, suffix: str) -> str:
    return segment_key(prefix, "orders", TOPIC_ID, 0, 42, new_kafka_uuid(), suffix)


def table_file(tmp_path: Path, tail: str) -> str:
    """A key where the export puts a table's file: its location as export/table.py picks it."""
    warehouse = Warehouse.of(str(tmp_path))
    location = warehouse.table_location(*table_name("orders.v2").split("."))
    return warehouse.key(f"{location}/{tail}")


@pytest.mark.parametrize("prefix", ["", "cluster-a"], ids=["no-prefix", "prefix"])
@pytest.mark.parametrize(
    ("make", "owner"),
    [
        (lambda p, tmp: segment(p, "log"), Owner.SEGMENTS),
        (lambda p, tmp: segment(p, "rsm-manifest"), Owner.SEGMENTS),
        (lambda p, tmp: segment(p, "timeindex"), Owner.SEGMENTS),
        (lambda p, tmp: new_wal_object_key(p), Owner.DISKLESS_WAL),
        (lambda p, tmp: f"{BucketLayout(p).storage_prefix}diskless/wal/x", Owner.SEGMENTS),
        (lambda p, tmp: table_file(tmp, "data/run-1/00000.parquet"), Owner.ICEBERG_WAREHOUSE),
        (lambda p, tmp: table_file(tmp, "metadata/00001-a.metadata.json"), Owner.ICEBERG_WAREHOUSE),
        (lambda p, tmp: table_file(tmp, "metadata/snap-1-1-a.avro"), Owner.ICEBERG_WAREHOUSE),
    ],
    ids=[
        "segment-log",
        "chunked-manifest",
        "segment-index",
        "wal-object",
        "not-a-wal-name-is-the-segments-orphan",
        "parquet",
        "metadata-json",
        "manifest-list",
    ],
)
def test_every_key_tierflow_writes_has_its_owner(
    prefix: str, make: Callable[[str, Path], str], owner: Owner, tmp_path: Path
) -> None:
    key = make(prefix, tmp_path)
    assert BucketLayout(prefix).owner_of(key) is owner


def test_the_warehouse_is_where_the_export_makes_its_tables(tmp_path: Path) -> None:
    warehouse = Warehouse.of(str(tmp_path))
    assert warehouse.key(warehouse.location) + "/" == WAREHOUSE_DIR
    owned = {p.owner: p.prefix for p in BucketLayout("tiered").prefixes()}
    assert owned == {
        Owner.DISKLESS_WAL: "tiered/diskless/wal/",
        Owner.ICEBERG_WAREHOUSE: WAREHOUSE_DIR,
        Owner.SEGMENTS: "tiered/",
    }


@pytest.mark.parametrize(
    "key", ["other-app/data.bin", "icebergs/x", "tiered-old/orders-x/0/y.log"], ids=str
)
def test_keys_outside_the_storage_prefix_and_the_warehouse_are_nobodys(key: str) -> None:
    assert BucketLayout("tiered").owner_of(key) is None


@pytest.mark.parametrize("prefix", ["iceberg", "/iceberg/", "iceberg/segments"], ids=str)
def test_a_storage_prefix_inside_the_warehouse_is_refused(prefix: str) -> None:
    with pytest.raises(InvalidSettingError, match=r"TIERFLOW_STORAGE_PREFIX=.* overlaps"):
        BucketLayout(prefix)
