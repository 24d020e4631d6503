"""The catalog an export commits to, and the bucket its tables' files are in.

By default a SQL catalog in the metadata store's database (SQLite embedded, PostgreSQL in
production), its warehouse the bucket's ``iceberg/`` prefix. ``TIERFLOW_ICEBERG_CATALOG``
names an Airflow connection of the Iceberg provider instead: a REST catalog (its host, and its
client id and secret for OAuth2), or any catalog pyiceberg loads from the connection's extras.
Either way the tables are made in the bucket, where tierflow writes their files.

pyiceberg reads and writes the table metadata through its own FileIO: for an ``s3://`` bucket
it is given the endpoint, region and credentials of the same Airflow connection the segments
use, as catalog properties of this process only; they are never written to the catalog, a
file or a log.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import SqlCatalog

from tierflow.config import Settings, variable
from tierflow.export.warehouse import Warehouse
from tierflow.storage.factory import is_s3_url, settings_object_store
from tierflow.storage.object_store import ObjectStore

NAMESPACE = "kafka"


@dataclass(frozen=True)
class IcebergTarget:
    """Where an export goes: the catalog, and the bucket (as URLs and as an ObjectStore)."""

    catalog: Catalog
    warehouse: Warehouse
    objects: ObjectStore


def settings_target(settings: Settings, objects: ObjectStore | None = None) -> IcebergTarget:
    """The export target of these settings; ``objects`` when the caller has the bucket open."""
    return IcebergTarget(
        settings_catalog(settings),
        Warehouse.of(settings.remote_storage),
        objects if objects is not None else settings_object_store(settings),
    )


def settings_catalog(settings: Settings) -> Catalog:
    """The catalog of these settings: their Iceberg connection's, or their store's database
    with their bucket's warehouse."""
    file_io = file_io_properties(settings)
    if settings.iceberg_catalog:
        return connection_catalog(settings.iceberg_catalog, file_io)
    warehouse = Warehouse.of(settings.remote_storage)
    return open_catalog(settings.db_url, warehouse.location, file_io)


def connection_catalog(conn_id: str, file_io: dict[str, str]) -> Catalog:
    """The catalog of an Airflow Iceberg connection, built by the provider's hook; the
    bucket's FileIO properties fill in what the connection does not set. A connection that
    is missing or a catalog that does not answer is one line naming the setting."""
    from airflow.providers.apache.iceberg.hooks.iceberg import IcebergHook

    try:
        catalog = IcebergHook(iceberg_conn_id=conn_id).catalog
        for key, value in file_io.items():
            catalog.properties.setdefault(key, value)
        catalog.create_namespace_if_not_exists(NAMESPACE)
    except Exception as exc:  # Airflow's, pyiceberg's or the HTTP client's: all say the same
        reason = error_line(exc)
        raise CatalogUnavailableError(
            f"{variable('iceberg_catalog')}={conn_id}: {reason}"
        ) from None
    return catalog


def error_line(exc: BaseException) -> str:
    """The first line of an error from pyiceberg or a catalog's client, or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class CatalogUnavailableError(ValueError):
    """The configured Iceberg catalog cannot be had: its connection, or the catalog itself."""


def open_catalog(db_url: str, warehouse: str, properties: dict[str, str] | None = None) -> Catalog:
    """The SQL catalog on the metadata store's database, its tables created on first use."""
    catalog = SqlCatalog("tierflow", uri=db_url, warehouse=warehouse, **(properties or {}))
    catalog.create_namespace_if_not_exists(NAMESPACE)
    return catalog


def file_io_properties(settings: Settings) -> dict[str, str]:
    """pyiceberg's S3 FileIO properties from the bucket's Airflow connection (none for a
    local bucket): endpoint, region, path or virtual addressing, and the credentials."""
    if not is_s3_url(settings.remote_storage):
        return {}
    from tierflow.storage.s3_handover import S3ClientSpec

    spec = S3ClientSpec.from_connection(settings.storage.aws_conn_id)
    addressing = (spec.config_kwargs or {}).get("s3", {}).get("addressing_style")
    properties = {
        "s3.endpoint": spec.endpoint_url,
        "s3.region": spec.region_name,
        "s3.access-key-id": spec.access_key_id,
        "s3.secret-access-key": spec.secret_access_key,
        "s3.session-token": spec.session_token,
        "s3.force-virtual-addressing": "true" if addressing == "virtual" else None,
    }
    return {key: value for key, value in properties.items() if value}
