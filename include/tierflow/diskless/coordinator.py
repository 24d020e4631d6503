"""The diskless coordinator (KIP-1163/KIP-1164's role) on the metadata store's SQL database.

It is the source of truth for diskless partitions: which batches exist, in which WAL object
and at which bytes, and which offsets they were given. It shares the metadata store's engine
(SQLite or PostgreSQL) but is a class of its own. The parts:

- ``registry``: diskless topics and their partitions' logs;
- ``commits``: registering objects before upload, committing batches (offset assignment),
  finding batches to read;
- ``truncation``: retention's and the merge's deletion of a partition's oldest batches, and
  the merge job's candidates;
- ``cleanup``: what the garbage collector may delete.
"""

from __future__ import annotations

from sqlalchemy import Engine

from tierflow.diskless.cleanup import ObjectCleanup
from tierflow.metadata.store import MetadataStore


class DisklessCoordinator(ObjectCleanup):
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def for_store(cls, store: MetadataStore) -> DisklessCoordinator:
        """Over the store's engine (migrated by the store: the tables come with 0003)."""
        return cls(store.engine)
