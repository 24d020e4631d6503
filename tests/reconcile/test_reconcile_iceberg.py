"""Reconcile after an Iceberg export (issue 31): the table's live files are no orphans, so
``reconcile --apply`` leaves the table loadable with every row, while a file no snapshot
references is found and deleted; an unreadable catalog or table makes it delete nothing there.

The export runs in this process (SQL catalog in the store's SQLite, warehouse in the local
bucket), twice, so the table has two snapshots and old metadata files in its metadata log.
Every file is then dated three days back: the grace period cannot be what keeps them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pyiceberg.table import Table

from tests.reconcile.support import (
    ACTOR,
    DAY_MS,
    HOUR_MS,
    age,
    bucket_keys,
    objects,
    put_old,
)
from tests.support.iceberg_rows import assert_holds_committed
from tests.support.settings_env import use_settings
from tests.support.tiered import Tiered, build_tiered
from tierflow.cli import main
from tierflow.export.catalog import open_catalog, settings_catalog
from tierflow.export.referenced import CatalogWarehouse, settings_warehouse
from tierflow.export.warehouse import Warehouse
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.reconcile import (
    FindingKind,
    ReconcileGrace,
    ReconcilePlan,
    ReconcileScope,
    Result,
    apply_reconcile,
    plan_reconcile,
)
from tierflow.lifecycle.reconcile.warehouse import WarehouseCatalog
from tierflow.storage.owned_prefixes import WAREHOUSE_DIR

pytestmark = [pytest.mark.slow]  # each builds, tiers and exports its own bucket (seconds)

TABLE = "kafka.orders"


@pytest.fixture
def exported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Tiered:
    """orders exported in two runs (orders-0 first, then both partitions), every file old."""
    t = build_tiered(tmp_path)
    use_settings(monkeypatch, t.settings)
    assert main(["topics", "register", "orders", "--config", "tierflow.iceberg.export=true"]) == 0
    assert main(["copy", "--owner", "test", "--topic", "orders", "--partition", "0"]) == 0
    assert main(["export", "iceberg", "--run", "first"]) == 0
    assert main(["copy", "--owner", "test"]) == 0
    assert main(["export", "iceberg", "--run", "second"]) == 0
    old = wall_clock_ms() - 3 * DAY_MS
    for key in bucket_keys(t):
        age(t, key, old)
    return t


def warehouse_keys(t: Tiered) -> set[str]:
    return {key for key in bucket_keys(t) if key.startswith(WAREHOUSE_DIR)}


def table(t: Tiered) -> Table:
    """The table as a new reader loads it: a catalog opened afresh."""
    return settings_catalog(t.settings).load_table(TABLE)


def table_dir(t: Tiered) -> str:
    return Warehouse.of(t.settings.remote_storage).key(table(t).location()) + "/"


def plan(
    t: Tiered,
    warehouse: WarehouseCatalog | None,
    grace_ms: int = DAY_MS,
    topics: list[str] | None = None,
) -> ReconcilePlan:
    return plan_reconcile(
        t.store,
        objects(t),
        ReconcileScope(t.settings.storage.prefix, topics=topics),
        ReconcileGrace(wall_clock_ms(), grace_ms, HOUR_MS),
        warehouse=warehouse,
    )


def apply(t: Tiered, p: ReconcilePlan, warehouse: WarehouseCatalog | None):
    now = wall_clock_ms()
    return apply_reconcile(
        p, t.store, t.rsm, objects(t), actor=ACTOR, now_ms=now, warehouse=warehouse
    )


def assert_every_row_reads_back(t: Tiered) -> None:
    loaded = table(t)
    assert len(loaded.snapshots()) == 2
    assert_holds_committed(loaded, [t.log("orders", 0), t.log("orders", 1)])


def plant_orphan_parquet(t: Tiered, *, when_ms: int, run: str = "run-ghost") -> str:
    """A Parquet file of the table's own schema in its data directory, that no snapshot
    references: what a commit that never happened leaves."""
    live = sorted(key for key in warehouse_keys(t) if key.endswith(".parquet"))[0]
    key = f"{table_dir(t)}data/{run}/00000-orphan.parquet"
    return put_old(t, key, objects(t).read_range(live), when_ms)


def test_a_dry_run_finds_no_orphan_among_the_live_table_files(exported: Tiered) -> None:
    t = exported
    keys = warehouse_keys(t)
    suffixes = [key.rsplit(".", 1)[-1] for key in keys]
    assert suffixes.count("parquet") >= 2 and suffixes.count("avro") >= 4
    assert suffixes.count("json") >= 3, "the current metadata.json and older ones"
    assert len(table(t).metadata.metadata_log) >= 2, "older metadata files in the log"

    p = plan(t, settings_warehouse(t.settings), grace_ms=0)

    assert p.findings == []
    assert p.objects_listed == len(bucket_keys(t))


@pytest.mark.parametrize("through", ["library", "cli"])
def test_apply_keeps_the_table_loadable_and_every_row_readable(
    exported: Tiered, through: str
) -> None:
    t = exported
    before = bucket_keys(t)
    if through == "cli":
        assert main(["reconcile", "--apply", "--grace", "0"]) == 0
    else:
        warehouse = settings_warehouse(t.settings)
        report = apply(t, plan(t, warehouse, grace_ms=0), warehouse)
        assert report.outcomes == []
    assert bucket_keys(t) == before
    assert_every_row_reads_back(t)


def test_a_genuine_orphan_is_deleted_and_the_table_still_loads(exported: Tiered) -> None:
    t = exported
    old = wall_clock_ms() - 3 * DAY_MS
    orphan = plant_orphan_parquet(t, when_ms=old)
    unknown = put_old(t, f"{WAREHOUSE_DIR}kafka.db/dropped/data/x.parquet", b"PAR1", old)
    in_flight = plant_orphan_parquet(t, when_ms=wall_clock_ms(), run="run-in-flight")
    live = warehouse_keys(t) - {orphan, unknown, in_flight}

    p = plan(t, settings_warehouse(t.settings))
    found = {f.key: f for f in p.findings}
    assert set(found) == {orphan, unknown, in_flight}
    assert {f.key for f in p.actionable} == {orphan}
    assert "no snapshot of kafka.orders references it" in found[orphan].message
    assert found[orphan].topic == "orders"
    # A table the catalog does not know may be another catalog's: reported, never deleted.
    assert "in no table the catalog knows" in found[unknown].message
    assert "never deleted" in found[unknown].message

    assert main(["reconcile", "--apply"]) == 1  # the in-flight file remains, within the grace
    assert warehouse_keys(t) == live | {in_flight, unknown}
    assert_every_row_reads_back(t)


def lose_current_metadata(t: Tiered) -> str:
    """The table's current metadata.json deleted (as the old reconcile did): it cannot load."""
    current = Warehouse.of(t.settings.remote_storage).key(table(t).metadata_location)
    objects(t).delete([current])
    return "table kafka.orders cannot be loaded"


def unopenable_catalog(t: Tiered) -> tuple[WarehouseCatalog, str]:
    location = Warehouse.of(t.settings.remote_storage).location
    broken = f"sqlite:///{t.bucket()}/no/such/dir/catalog.db"
    catalog = CatalogWarehouse(lambda: open_catalog(broken, location), t.settings.remote_storage)
    return catalog, "the Iceberg catalog cannot be opened"


@pytest.mark.parametrize(
    "case", ["no-catalog-given", "catalog-cannot-be-opened", "table-cannot-be-loaded"]
)
def test_an_unreadable_catalog_or_table_deletes_nothing_in_the_warehouse(
    exported: Tiered, case: str
) -> None:
    t = exported
    orphan = plant_orphan_parquet(t, when_ms=wall_clock_ms() - 3 * DAY_MS)
    warehouse: WarehouseCatalog | None = settings_warehouse(t.settings)
    if case == "no-catalog-given":
        warehouse, reason = None, "reconcile was given no Iceberg catalog to read"
    elif case == "catalog-cannot-be-opened":
        warehouse, reason = unopenable_catalog(t)
    else:
        reason = lose_current_metadata(t)
    before = warehouse_keys(t)
    assert orphan in before

    p = plan(t, warehouse, grace_ms=0)
    (finding,) = p.findings
    assert finding.kind is FindingKind.WAREHOUSE_UNCHECKED and not finding.actionable
    assert f"{len(before)} file(s) of the Iceberg warehouse not checked" in finding.message
    assert reason in finding.message, finding.message
    apply(t, p, warehouse)
    assert warehouse_keys(t) == before


def test_the_cli_says_why_the_warehouse_was_not_checked(
    exported: Tiered, capsys: pytest.CaptureFixture[str]
) -> None:
    t = exported
    lose_current_metadata(t)
    before = warehouse_keys(t)
    capsys.readouterr()
    assert main(["reconcile", "--apply", "--grace", "0"]) == 1
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "not checked and none deleted" in line)
    assert "table kafka.orders cannot be loaded" in line
    assert warehouse_keys(t) == before


def test_apply_keeps_an_orphan_that_a_commit_took_in_since_planning(exported: Tiered) -> None:
    t = exported
    orphan = plant_orphan_parquet(t, when_ms=wall_clock_ms() - 3 * DAY_MS)
    warehouse = settings_warehouse(t.settings)
    p = plan(t, warehouse)
    assert [f.key for f in p.actionable] == [orphan]

    table(t).add_files([Warehouse.of(t.settings.remote_storage).url(orphan)])
    report = apply(t, p, warehouse)

    (outcome,) = report.outcomes
    assert outcome.result is Result.SKIPPED
    assert outcome.detail == "a snapshot of kafka.orders references it now"
    assert orphan in warehouse_keys(t)


def test_a_topic_filter_judges_only_that_topics_table(exported: Tiered) -> None:
    t = exported
    old = wall_clock_ms() - 3 * DAY_MS
    orphan = plant_orphan_parquet(t, when_ms=old)
    put_old(t, f"{WAREHOUSE_DIR}kafka.db/dropped/data/x.parquet", b"PAR1", old)
    warehouse = settings_warehouse(t.settings)

    assert plan(t, warehouse, topics=["payments"]).findings == []
    assert [f.key for f in plan(t, warehouse, topics=["orders"]).findings] == [orphan]
