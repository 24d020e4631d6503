"""Engines for the metadata store, configured per dialect.

SQLite: Airflow runs tasks in separate processes that all write the same file, so each
connection gets WAL (readers never block the writer), a long busy timeout (writers queue instead
of failing with "database is locked") and foreign keys (off by default in SQLite).

PostgreSQL: READ COMMITTED, whatever the server's default. Every write is a conditional UPDATE
(or INSERT) naming what it read; under READ COMMITTED a writer that waited for a competing
transaction re-checks its WHERE clause against the committed row and simply matches nothing,
whereas REPEATABLE READ or SERIALIZABLE would fail it with a serialization error instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

BUSY_TIMEOUT_MS = 30_000


def create_store_engine(url: str) -> Engine:
    sa_url = make_url(url)
    backend = sa_url.get_backend_name()
    if backend == "postgresql":
        return create_engine(sa_url, pool_pre_ping=True, isolation_level="READ COMMITTED")
    if backend != "sqlite":
        return create_engine(sa_url, pool_pre_ping=True)
    if (
        sa_url.database
        and sa_url.database != ":memory:"
        and not sa_url.database.startswith("file:")
    ):
        Path(sa_url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(sa_url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", _configure_sqlite_connection)
    return engine


def _configure_sqlite_connection(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        # WAL makes NORMAL durable against application crashes; only power loss can drop
        # the last transactions, which the lifecycle's idempotent retries tolerate.
        cursor.execute("PRAGMA synchronous = NORMAL")
    finally:
        cursor.close()
