"""Every prefix tierflow writes under in the bucket, in one place, and whose rule judges it.

Reconcile asks this registry who owns a key before it calls the key an orphan: a key that
belongs to another owner is judged by that owner's rule, never by the segments'. When tierflow
starts writing somewhere new, add its prefix here first.

* ``diskless-wal``: ``<prefix>diskless/wal/<uuid>`` (storage/wal_keys.py). A WAL object holds
  batches of many partitions; the diskless GC judges it against the coordinator.
* ``iceberg-warehouse``: ``iceberg/<namespace>.db/<table>/...`` at the bucket's root
  (export/warehouse.py): Parquet data files, ``metadata.json``, manifests and manifest lists.
  A file is live while a snapshot of its table (or the table's metadata log) references it.
* ``segments``: everything else under the storage prefix, laid out as
  ``<prefix><topic>-<topic id>/<partition>/<offset>-<segment id>.<suffix>``, or with the
  kafka-local layout ``<prefix>kafka-tiered-storage/<topic>-<partition>-<topic id>/...``
  (storage/keys.py): the ``.log``, its indexes and the chunked layout's manifest. A key is
  live while a live segment row names it; a key of no registered partition is an orphan.

Keys outside the storage prefix and the warehouse are not tierflow's and are never listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tierflow.config import InvalidSettingError, variable
from tierflow.storage.keys import normalize_prefix
from tierflow.storage.wal_keys import is_wal_object_key, wal_prefix

WAREHOUSE_DIR = "iceberg/"  # the Iceberg export's warehouse, at the bucket's root


class Owner(StrEnum):
    DISKLESS_WAL = "diskless-wal"
    ICEBERG_WAREHOUSE = "iceberg-warehouse"
    SEGMENTS = "segments"


@dataclass(frozen=True)
class OwnedPrefix:
    """One prefix tierflow owns: where, what its keys look like, and who judges them."""

    owner: Owner
    prefix: str
    shape: str
    judged_by: str


@dataclass(frozen=True)
class BucketLayout:
    """The registry for one storage prefix (``TIERFLOW_STORAGE_PREFIX``, normalized here)."""

    storage_prefix: str

    def __post_init__(self) -> None:
        prefix = normalize_prefix(self.storage_prefix)
        object.__setattr__(self, "storage_prefix", prefix)
        if prefix and (prefix.startswith(WAREHOUSE_DIR) or WAREHOUSE_DIR.startswith(prefix)):
            raise InvalidSettingError(
                f"{variable('storage_prefix')}={prefix!r} overlaps the Iceberg warehouse "
                f"{WAREHOUSE_DIR!r}: segments and table files would be judged by the same rule"
            )

    def prefixes(self) -> tuple[OwnedPrefix, ...]:
        """Every owned prefix, the most specific first (the order ``owner_of`` decides in)."""
        segments = f"{self.storage_prefix}<partition directory>/<offset>-<segment id>"
        return (
            OwnedPrefix(
                Owner.DISKLESS_WAL,
                wal_prefix(self.storage_prefix),
                f"{wal_prefix(self.storage_prefix)}<uuid>",
                "the diskless GC, against the coordinator",
            ),
            OwnedPrefix(
                Owner.ICEBERG_WAREHOUSE,
                WAREHOUSE_DIR,
                f"{WAREHOUSE_DIR}<namespace>.db/<table>/(data|metadata)/...",
                "reconcile, against every snapshot and the metadata log of its table",
            ),
            OwnedPrefix(
                Owner.SEGMENTS,
                self.storage_prefix,
                f"{segments}.<suffix>: the .log, its indexes, the chunked manifest",
                "reconcile, against the live segment rows of its partition",
            ),
        )

    def owner_of(self, key: str) -> Owner | None:
        """Whose rule judges ``key``; None for a key tierflow does not own. A key under the
        WAL prefix that is not a WAL object's name is the segments' (an orphan there)."""
        wal = is_wal_object_key(key, self.storage_prefix)
        for owned in self.prefixes():
            if key.startswith(owned.prefix) and (wal or owned.owner is not Owner.DISKLESS_WAL):
                return owned.owner
        return None
