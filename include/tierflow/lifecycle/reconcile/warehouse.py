"""The Iceberg warehouse's rule: a file is an orphan only if no snapshot of its table needs it.

What a table references comes from its catalog (export/referenced.py reads it with pyiceberg):
the current ``metadata.json`` and those in its metadata log, and for every snapshot still in
the metadata its manifest list, its manifests and the data files they name. A file any table
references is live, in whichever table's directory it lies; a file under no table the catalog
knows is reported and never deleted: a dropped table's files, or every table's when the
catalog setting points at another catalog, and only a person can tell which. Only files older
than the object grace go: a commit in flight writes its files before any snapshot names them.

The warehouse is listed before the catalog is read, so a commit made in between is seen as
referencing its files. When the catalog cannot be opened, or one of its tables cannot be read,
nothing under the warehouse is judged: one ``warehouse-unchecked`` finding says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.lifecycle.reconcile.findings import Action, Finding, FindingKind, ReconcilePlan
from tierflow.lifecycle.reconcile.orphans import Place, add_orphan
from tierflow.storage.local import leftover_keys
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.owned_prefixes import WAREHOUSE_DIR


@dataclass(frozen=True)
class TableFiles:
    """One table whose files are in the warehouse, and every key its metadata references."""

    name: str  # e.g. kafka.orders
    topic: str | None  # the Kafka topic it exports (its tierflow.topic property), if any
    location: str  # its directory, as a key of the bucket ending in "/"
    referenced: frozenset[str]


class WarehouseUnreadableError(RuntimeError):
    """The catalog, or one of its tables, cannot be read: no warehouse file can be judged."""


class WarehouseCatalog(Protocol):
    """The catalog as reconcile sees it (export/referenced.py's CatalogWarehouse)."""

    def tables(self) -> Sequence[TableFiles]:
        """Every table with its files in the warehouse; WarehouseUnreadableError if not."""
        ...


def plan_warehouse(
    plan: ReconcilePlan,
    objects: ObjectStore,
    catalog: WarehouseCatalog | None,
    topics: set[str] | None = None,
    progress: Progress = NO_PROGRESS,
) -> None:
    """Judge every file under the warehouse by its table's snapshots; ``topics`` (Kafka names)
    narrows it to those topics' tables. The catalog is opened only when there are files."""
    leftovers = set(leftover_keys(objects, WAREHOUSE_DIR))
    keys = sorted({*objects.list(WAREHOUSE_DIR), *leftovers})
    if not keys:
        return
    progress.note(f"the Iceberg warehouse: {len(keys)} file(s) under {WAREHOUSE_DIR}")
    try:
        tables = read_tables(catalog)
    except WarehouseUnreadableError as exc:
        plan.objects_listed += len(keys)
        plan.findings.append(_unchecked(len(keys), str(exc)))
        return
    chosen = tables if topics is None else [table for table in tables if table.topic in topics]
    for key in keys:
        table = table_of(chosen, key)
        if topics is not None and table is None:
            continue  # no table of the chosen topics: another topic's, or no table's
        plan.objects_listed += 1
        if referencing(tables, key) is None:
            temporary = key in leftovers
            place = _place(table, temporary=temporary)
            add_orphan(plan, objects, key, place, deletable=temporary or table is not None)


def read_tables(catalog: WarehouseCatalog | None) -> list[TableFiles]:
    if catalog is None:
        raise WarehouseUnreadableError("reconcile was given no Iceberg catalog to read")
    return list(catalog.tables())


def table_of(tables: Sequence[TableFiles], key: str) -> TableFiles | None:
    """The table whose directory holds ``key`` (locations end in "/", so none is a prefix of
    another's name)."""
    return next((table for table in tables if key.startswith(table.location)), None)


def referencing(tables: Sequence[TableFiles], key: str) -> TableFiles | None:
    """A table whose metadata references ``key``: its own, as a rule, but a file another table
    took in with add_files is live too."""
    return next((table for table in tables if key in table.referenced), None)


def still_orphan(tables: Sequence[TableFiles] | str, key: str) -> str | None:
    """Why a warehouse orphan found at planning must be kept now, or None. ``tables`` is the
    catalog read again just before apply, or why it could not be read."""
    if isinstance(tables, str):
        return f"the Iceberg catalog cannot be read now, so nothing in it is deleted: {tables}"
    table = referencing(tables, key)
    return None if table is None else f"a snapshot of {table.name} references it now"


def _place(table: TableFiles | None, *, temporary: bool) -> Place:
    if temporary:
        why = "temporary file of an upload that was killed"
    elif table is None:  # a dropped table, or a catalog configured wrong: a person decides
        why = "in the Iceberg warehouse, in no table the catalog knows (TIERFLOW_ICEBERG_CATALOG)"
    else:
        why = f"no snapshot of {table.name} references it, nor its metadata log"
    topic = table.topic if table is not None else None
    return Place(topic, None, None, why)


def _unchecked(count: int, reason: str) -> Finding:
    return Finding(
        kind=FindingKind.WAREHOUSE_UNCHECKED,
        action=Action.REPORT_ONLY,
        actionable=False,
        message=f"{WAREHOUSE_DIR}: {count} file(s) of the Iceberg warehouse not checked and "
        f"none deleted, because {reason}",
        key=WAREHOUSE_DIR,
    )
