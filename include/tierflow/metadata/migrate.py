"""Run the packaged Alembic migrations programmatically; no alembic.ini on disk is needed.

The store's own connection is handed to env.py through ``Config.attributes`` so the SQLite
pragmas apply to the migration too. The version table has its own name so the schema can share
a database with Airflow's (which owns ``alembic_version``).

On PostgreSQL the migration transaction first takes a transaction-level advisory lock, so
processes that start together migrate one after another: the later ones wait, then find the
schema at head. (PostgreSQL's DDL is transactional, so without the lock concurrent
CREATE TABLE IF NOT EXISTS can still collide on the catalog's unique indexes.) SQLite
serializes writers by itself.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError
from sqlmodel import SQLModel

from tierflow.metadata.models import TABLE_NAMES, VERSION_TABLE

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
# pg_advisory_xact_lock key of the metadata migration: any constant unique to tierflow.
MIGRATION_LOCK_KEY = 0x7469657266  # "tierf"
log = logging.getLogger(__name__)


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR).replace("%", "%%"))
    config.attributes["url"] = url
    return config


def head_revision() -> str:
    head = ScriptDirectory(str(MIGRATIONS_DIR)).get_current_head()
    if head is None:
        raise RuntimeError(f"no Alembic revisions in {MIGRATIONS_DIR}")
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()


def upgrade(engine: Engine, revision: str = "head", *, attempts: int = 20) -> None:
    """Upgrade to ``revision``; a no-op when already there.

    Processes that start together may all find an empty database. The migration uses IF NOT
    EXISTS, so whoever loses a race retries and then finds the schema at head.
    """
    target = head_revision() if revision == "head" else revision
    for attempt in range(1, attempts + 1):
        if current_revision(engine) == target:
            return
        try:
            _run(engine, "upgrade", revision)
            return
        except DBAPIError as exc:
            if attempt == attempts:
                raise
            log.info("metadata migration raced another process (%s); retrying", exc.orig)
            time.sleep(0.05 * attempt)


def include_name(name: str | None, type_: str, _parent_names: object) -> bool:
    """Only tierflow's tables: the database may be shared with other applications."""
    if type_ == "table":
        return name in TABLE_NAMES
    return True


def compare_type(
    context: MigrationContext,
    _inspected_column: Any,
    _metadata_column: Any,
    inspected_type: sa.types.TypeEngine,
    metadata_type: sa.types.TypeEngine,
) -> bool | None:
    """Alembic's type comparison, except that on SQLite string types never differ.

    SQLite stores every string as TEXT whatever its declared type or length, so revision 0002
    leaves SQLite's declared VARCHAR types alone; None defers to Alembic everywhere else.
    """
    strings = isinstance(inspected_type, sa.String) and isinstance(metadata_type, sa.String)
    if strings and context.dialect.name == "sqlite":
        return False
    return None


def schema_diffs(engine: Engine) -> list[Any]:
    """What Alembic's autogenerate would change to make the database match the models.

    Compares the models imported so far: import ``tierflow.diskless.models`` first to check
    the diskless tables too (the diskless package is a layer above this one).
    """
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection,
            opts={
                "version_table": VERSION_TABLE,
                "include_name": include_name,
                "compare_type": compare_type,
            },
        )
        return list(compare_metadata(context, SQLModel.metadata))


def downgrade(engine: Engine, revision: str = "base") -> None:
    _run(engine, "downgrade", revision)


def _run(engine: Engine, direction: str, revision: str) -> None:
    config = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as connection:
        _serialize_migrations(connection)
        config.attributes["connection"] = connection
        if direction == "upgrade":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)


def _serialize_migrations(connection: Connection) -> None:
    """On PostgreSQL, wait for any other process migrating the same database (see module doc)."""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
