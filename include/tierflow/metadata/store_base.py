"""Plumbing shared by the store's parts: sessions, write transactions, common lookups.

Reads happen outside write transactions: on SQLite a transaction that reads first and writes
later can fail with "database is locked" however long the busy timeout is, while one that
starts with its write simply waits its turn. So every writer reads, then opens a transaction
whose first statement is a conditional UPDATE (or INSERT) naming what it read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Connection, Engine, update
from sqlmodel import Session, SQLModel, col
from sqlmodel.sql.expression import SelectOfScalar

from tierflow.metadata.errors import UnknownPartitionError, UnknownTopicError
from tierflow.metadata.events import Event, append_event
from tierflow.metadata.models import Partition, Topic

# Optimistic writes retry when another process changed the row between our read and our
# UPDATE; states only move forward, so a handful of attempts always suffices.
MAX_ATTEMPTS = 8

Row = TypeVar("Row")


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def partition_key(model: Any, topic_id: str, partition: int) -> tuple[ColumnElement[bool], ...]:
    """The WHERE conditions naming one partition's rows of ``model`` (any table keyed by
    topic id and partition)."""
    return (col(model.topic_id) == topic_id, col(model.partition) == partition)


def update_one(
    connection: Connection,
    model: type[SQLModel],
    where: tuple[ColumnElement[bool], ...] | list[ColumnElement[bool]],
    values: Mapping[str, Any],
) -> bool:
    """One conditional UPDATE in the caller's transaction; True if it changed exactly one row.

    ``where`` names what the caller read (a state, an epoch, an offset), so of racing writers
    only one matches: a False is the caller's cue to re-read or give up.
    """
    result = connection.execute(update(model).where(*where).values(dict(values)))
    return result.rowcount == 1


def update_and_record(
    connection: Connection,
    model: type[SQLModel],
    where: tuple[ColumnElement[bool], ...],
    values: Mapping[str, Any],
    event: Event,
) -> bool:
    """``update_one``, and when it changed the row, the event that records the change: both
    in the caller's transaction, so the history holds exactly the changes that committed."""
    if not update_one(connection, model, where, values):
        return False
    append_event(connection, event)
    return True


def found_or_raise(found: Row | None, error: Callable[[], Exception]) -> Row:
    """What a lookup found, or ``error()`` (saying what was looked for) when it found nothing;
    the error is built only then, not on every lookup of the hot paths."""
    if found is None:
        raise error()
    return found


class EngineBase:
    """Sessions and write transactions over ``engine``: the metadata store's and the diskless
    coordinator's, which share the database and its rules (see the module doc)."""

    engine: Engine

    def _session(self) -> Session:
        # Rows are handed out after the session closes; keep their loaded values.
        return Session(self.engine, expire_on_commit=False)

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        """A write transaction; callers make a write their first statement (see module doc)."""
        with self.engine.begin() as connection:
            yield connection

    def _get(self, model: type[Row], key: object) -> Row | None:
        """The row of ``model`` with primary key ``key``, or None."""
        with self._session() as session:
            return session.get(model, key)

    def _first(self, query: SelectOfScalar[Row]) -> Row | None:
        with self._session() as session:
            return session.exec(query).first()

    def _all(self, query: SelectOfScalar[Row]) -> list[Row]:
        with self._session() as session:
            return list(session.exec(query).all())

    def topic_by_id(self, topic_id: str) -> Topic:
        """A topic's row by id; both the store and the diskless registry read topics."""
        return found_or_raise(
            self._get(Topic, topic_id), lambda: UnknownTopicError(f"unknown topic id {topic_id!r}")
        )


class StoreBase(EngineBase):
    def partition(self, topic_id: str, partition: int) -> Partition | None:
        return self._get(Partition, (topic_id, partition))

    def _require_partition(self, topic_id: str, partition: int) -> Partition:
        return found_or_raise(
            self.partition(topic_id, partition),
            lambda: UnknownPartitionError(f"unknown partition {topic_id}-{partition}"),
        )
