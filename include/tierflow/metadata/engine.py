"""Engines for the metadata store, configured per dialect.

SQLite: Airflow runs tasks in separate processes that all write the same file, so each
connection gets WAL (readers never block the writer), a long busy timeout (writers queue instead
of failing with "database is locked") and foreign keys (off by default in SQLite).

PostgreSQL: READ COMMITTED, whatever the server's default. Every write is a conditional UPDATE
(or INSERT) naming what it read; under READ COMMITTED a writer that waited for a competing
transaction re-checks its WHERE clause against the committed row and simply matches nothing,
whereas REPEATABLE READ or SERIALIZABLE would fail it with a serialization error instead.

The URL may hold a password; no error raised here carries it. A failed connection raises
``StoreUnavailableError``, which names the store by ``describe_url`` (user, host, port and
database, password hidden), and a URL whose password was left unquoted is refused without
being echoed, because SQLAlchemy would read the password's tail as the host and database.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import URL, Engine, create_engine, event
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import DBAPIError, OperationalError

BUSY_TIMEOUT_MS = 30_000
HIDDEN = "***"


class InvalidStoreURLError(ValueError):
    """The store URL cannot be read safely; the message never repeats it."""


class StoreUnavailableError(OperationalError):
    """Connecting to the metadata store failed; names the store, never its password."""

    def __init__(self, store: str, detail: str, orig: BaseException | None = None) -> None:
        super().__init__(None, None, orig)  # type: ignore[arg-type]
        self.store = store
        self.detail = detail

    @classmethod
    def from_cause(cls, url: URL, cause: DBAPIError) -> StoreUnavailableError:
        # The driver's message comes from the server or libpq and never holds the password;
        # should one ever echo it anyway, it is hidden here too. libpq's spans lines.
        detail = " ".join(str(cause.orig).split())
        for secret in password_forms(url):
            detail = detail.replace(secret, HIDDEN)
        error = cls(describe_url(url), detail, cause.orig)
        error.connection_invalidated = cause.connection_invalidated
        return error

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (self.__class__, (self.store, self.detail))  # the driver's error stays behind

    def __str__(self) -> str:
        return f"metadata store {self.store}: cannot connect: {self.detail}"


def describe_url(url: str | URL) -> str:
    """The URL to show in messages and logs: everything but the password."""
    return make_url(url).render_as_string(hide_password=True)


def password_forms(url: str | URL) -> list[str]:
    """The URL's password as the server gets it and as written in the URL (quoted)."""
    password = make_url(url).password
    if not password:
        return []
    return sorted({str(password), quote(str(password), safe="")}, key=len, reverse=True)


def check_store_url(url: str) -> URL:
    """Parse the URL; refuse one whose password holds an unquoted '@'.

    SQLAlchemy ends the password at the first '@', so ``user:p@ss@host/db`` becomes host
    ``ss@host``: every message naming the host would show the rest of the password.
    """
    scheme, sep, rest = url.partition("://")
    if sep and not scheme.startswith("sqlite") and rest.split("?", 1)[0].count("@") > 1:
        raise InvalidStoreURLError(
            f"the metadata store URL ({scheme}://...) holds more than one '@' before the "
            "host: URL-quote the password ('@' is %40; the URL is not shown here)"
        )
    return make_url(url)


def create_store_engine(url: str) -> Engine:
    sa_url = check_store_url(url)
    backend = sa_url.get_backend_name()
    if backend == "postgresql":
        engine = create_engine(sa_url, pool_pre_ping=True, isolation_level="READ COMMITTED")
        return _naming_the_store_on_connect_errors(engine)
    if backend != "sqlite":
        return _naming_the_store_on_connect_errors(create_engine(sa_url, pool_pre_ping=True))
    if (
        sa_url.database
        and sa_url.database != ":memory:"
        and not sa_url.database.startswith("file:")
    ):
        Path(sa_url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(sa_url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
    event.listen(engine, "connect", _configure_sqlite_connection)
    return _naming_the_store_on_connect_errors(engine)


def _naming_the_store_on_connect_errors(engine: Engine) -> Engine:
    """A failed connect raises StoreUnavailableError instead of the driver's bare message,
    which names neither the database nor the user. A failed pre-ping is left alone: the pool
    handles it by reconnecting."""

    def name_the_store(context: ExceptionContext) -> BaseException | None:
        cause = context.sqlalchemy_exception
        if context.connection is not None or context.is_pre_ping:
            return None
        if not isinstance(cause, DBAPIError) or isinstance(cause, StoreUnavailableError):
            return None
        return StoreUnavailableError.from_cause(engine.url, cause)

    event.listen(engine, "handle_error", name_the_store)
    return engine


def _configure_sqlite_connection(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _switch_to_wal(cursor)
        cursor.execute("PRAGMA foreign_keys = ON")
        # WAL makes NORMAL durable against application crashes; only power loss can drop
        # the last transactions, which the lifecycle's idempotent retries tolerate.
        cursor.execute("PRAGMA synchronous = NORMAL")
    finally:
        cursor.close()


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """Switching a new file to WAL takes an exclusive lock, and SQLite answers "database is
    locked" at once, without waiting out busy_timeout, when waiting could deadlock (processes
    opening a new store together): so wait here, as long as busy_timeout would."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
