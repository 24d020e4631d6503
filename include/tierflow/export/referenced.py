"""Which files of the bucket the catalog's tables reference: what reconcile keeps in the
warehouse (lifecycle/reconcile/warehouse.py judges the rest).

pyiceberg reads every table of every namespace: its current metadata file and those of its
metadata log, its statistics files, and for each snapshot still in the metadata the manifest
list, the manifests (read once each) and every file they name, deleted entries included (an
older snapshot still reads those). Anything that cannot be read makes the whole warehouse
unreadable: a file is never called an orphan on a partial view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pyiceberg.catalog import Catalog
from pyiceberg.table import Table

from tierflow.config import Settings
from tierflow.export.catalog import error_line, settings_catalog
from tierflow.export.table import TOPIC
from tierflow.export.warehouse import Warehouse
from tierflow.lifecycle.reconcile.warehouse import TableFiles, WarehouseUnreadableError

T = TypeVar("T")
Identifier = tuple[str, ...]


@dataclass(frozen=True)
class CatalogWarehouse:
    """The warehouse as its catalog sees it; opened only when ``tables`` is asked."""

    open_catalog: Callable[[], Catalog]
    remote_storage: str  # TIERFLOW_REMOTE_STORAGE: the bucket the warehouse is in

    def tables(self) -> list[TableFiles]:
        """Every table with its location in the bucket, and the keys it references."""
        bucket = self.remote_storage
        warehouse = _attempt("the bucket has no Iceberg warehouse", Warehouse.of, bucket)
        catalog = _attempt("the Iceberg catalog cannot be opened", self.open_catalog)
        names = _attempt("the Iceberg catalog cannot list its tables", table_identifiers, catalog)
        found = []
        for name in names:
            shown = ".".join(name)
            table = _attempt(f"table {shown} cannot be loaded", catalog.load_table, name)
            files = _attempt(f"table {shown} cannot be read", table_files, table, warehouse)
            if files is not None:
                found.append(files)
        return found


def settings_warehouse(settings: Settings) -> CatalogWarehouse:
    """The warehouse of these settings, its catalog opened on first use."""
    return CatalogWarehouse(lambda: settings_catalog(settings), settings.remote_storage)


def table_identifiers(catalog: Catalog) -> list[Identifier]:
    """Every table of every namespace, nested namespaces included."""
    found: list[Identifier] = []
    pending = [tuple(ns) for ns in catalog.list_namespaces()]
    seen: set[Identifier] = set()
    while pending:
        namespace = pending.pop()
        if namespace in seen:
            continue
        seen.add(namespace)
        found.extend(tuple(name) for name in catalog.list_tables(namespace))
        pending.extend(tuple(ns) for ns in catalog.list_namespaces(namespace))
    return sorted(found)


def table_files(table: Table, warehouse: Warehouse) -> TableFiles | None:
    """The keys ``table`` references; None for a table whose location is not in the bucket."""
    location = bucket_key(warehouse, table.location().rstrip("/"))
    if location is None:
        return None
    metadata = table.metadata
    urls = {table.metadata_location, *(entry.metadata_file for entry in metadata.metadata_log)}
    urls.update(stats.statistics_path for stats in metadata.statistics)
    urls.update(stats.statistics_path for stats in metadata.partition_statistics)
    urls.update(snapshot_files(table))
    keys = {bucket_key(warehouse, url) for url in urls}
    return TableFiles(
        name=".".join(table.name()),
        topic=table.properties.get(TOPIC),
        location=f"{location}/",
        referenced=frozenset(key for key in keys if key is not None),
    )


def snapshot_files(table: Table) -> set[str]:
    """The URLs of every snapshot's manifest list, its manifests and the files they name."""
    urls: set[str] = set()
    manifests = {}
    for snapshot in table.snapshots():
        urls.add(snapshot.manifest_list)
        manifests.update((m.manifest_path, m) for m in snapshot.manifests(table.io))
    for path, manifest in manifests.items():
        urls.add(path)
        entries = manifest.fetch_manifest_entry(table.io, discard_deleted=False)
        urls.update(entry.data_file.file_path for entry in entries)
    return urls


def bucket_key(warehouse: Warehouse, url: str) -> str | None:
    """The key of a URL that table metadata names, in either spelling Iceberg writers use
    (``file:/x`` or ``file:///x``; ``s3a://`` or ``s3://``); None outside the bucket."""
    scheme, _, rest = url.partition(":")
    if scheme == "file":
        url = "file:///" + rest.lstrip("/")
    elif scheme in ("s3a", "s3n"):
        url = "s3:" + rest
    return warehouse.key(url) if url.startswith(warehouse.bucket + "/") else None


def _attempt(what: str, call: Callable[..., T], *args: object) -> T:
    """``call(*args)``, any failure one WarehouseUnreadableError saying ``what`` and why."""
    try:
        return call(*args)
    except Exception as exc:  # pyiceberg's, the catalog client's, the FileIO's: all unreadable
        raise WarehouseUnreadableError(f"{what}: {error_line(exc)}") from exc
