"""Where an export's files live: the bucket's ``iceberg/`` prefix, seen two ways.

The catalog and the table metadata name files by URL (``file:///…`` or ``s3://…``); tierflow
writes, lists and deletes them as keys of the configured bucket, through the same ObjectStore
as the segments (a local directory, or S3 through the Airflow connection; a Spark executor
through the handed-over client). A Parquet file is written whole and then put, so a killed
writer leaves nothing a reader could take for a file (S3 shows an object whole or not at all,
a local bucket renames it into place).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from tierflow.storage.object_store import ObjectStore
from tierflow.storage.owned_prefixes import WAREHOUSE_DIR
from tierflow.storage.urls import LOCAL_SCHEMES, shown_url


@dataclass(frozen=True)
class Warehouse:
    """The bucket's URL (``file:///abs/path`` or ``s3://bucket[/prefix]``, no trailing slash)."""

    bucket: str

    @classmethod
    def of(cls, remote_storage: str) -> Warehouse:
        """The warehouse of a ``TIERFLOW_REMOTE_STORAGE`` value: a path, file:// or s3://."""
        scheme = urlparse(remote_storage).scheme
        if scheme in LOCAL_SCHEMES:
            root = Path(remote_storage.removeprefix("file://")).absolute()
            return cls(f"file://{root.as_posix().rstrip('/')}")
        if scheme == "s3":
            return cls(remote_storage.rstrip("/"))
        raise ValueError(
            f"{shown_url(remote_storage)}: the Iceberg export writes to a path, "
            "file:// or s3:// bucket"
        )

    @property
    def location(self) -> str:
        """The catalog's warehouse: where its tables are made."""
        return f"{self.bucket}/{WAREHOUSE_DIR.rstrip('/')}"

    def table_location(self, namespace: str, name: str) -> str:
        """A table's location, as a SQL catalog would choose it; given to any catalog, so
        every table's files are in the bucket tierflow writes to."""
        return f"{self.location}/{namespace}.db/{name}"

    def key(self, url: str) -> str:
        """The bucket key of a URL in the bucket."""
        if not url.startswith(self.bucket + "/"):
            raise ValueError(f"{url}: outside the bucket {self.bucket} the export writes to")
        return url[len(self.bucket) + 1 :]

    def url(self, key: str) -> str:
        return f"{self.bucket}/{key}"


@dataclass(frozen=True)
class DataFiles:
    """One run's directory of a table's data: Parquet files put under ``key``, named by
    ``url`` for the catalog."""

    objects: ObjectStore
    key: str
    url: str

    def write(self, name: str, table: pa.Table) -> str:
        """Put ``table`` as the Parquet file ``name``; its URL."""
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        self.objects.put_bytes(f"{self.key}/{name}", sink.getvalue().to_pybytes())
        return f"{self.url}/{name}"
