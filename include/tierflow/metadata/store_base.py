"""Plumbing shared by the store's parts: sessions, write transactions, common lookups.

Reads happen outside write transactions: on SQLite a transaction that reads first and writes
later can fail with "database is locked" however long the busy timeout is, while one that
starts with its write simply waits its turn. So every writer reads, then opens a transaction
whose first statement is a conditional UPDATE (or INSERT) naming what it read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine
from sqlmodel import Session

from tierflow.metadata.errors import UnknownPartitionError, UnknownTopicError
from tierflow.metadata.models import Partition, Topic

# Optimistic writes retry when another process changed the row between our read and our
# UPDATE; states only move forward, so a handful of attempts always suffices.
MAX_ATTEMPTS = 8


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class StoreBase:
    engine: Engine

    def topic_by_id(self, topic_id: str) -> Topic:
        with self._session() as session:
            found = session.get(Topic, topic_id)
        if found is None:
            raise UnknownTopicError(f"unknown topic id {topic_id!r}")
        return found

    def partition(self, topic_id: str, partition: int) -> Partition | None:
        with self._session() as session:
            return session.get(Partition, (topic_id, partition))

    def _session(self) -> Session:
        # Rows are handed out after the session closes; keep their loaded values.
        return Session(self.engine, expire_on_commit=False)

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A write transaction; callers make a write their first statement (see module doc)."""
        with self.engine.begin() as connection:
            yield connection

    def _require_partition(self, topic_id: str, partition: int) -> Partition:
        found = self.partition(topic_id, partition)
        if found is None:
            raise UnknownPartitionError(f"unknown partition {topic_id}-{partition}")
        return found
