"""Alembic environment for the metadata store.

Normally run from ``tierflow.metadata.migrate`` with a live connection in
``config.attributes["connection"]``; a URL in ``config.attributes["url"]`` (or sqlalchemy.url)
also works, which is what offline ``--sql`` mode uses.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection
from sqlmodel import SQLModel

from tierflow.metadata import migrate, models
from tierflow.metadata.engine import create_store_engine

config = context.config
target_metadata = SQLModel.metadata


def _url() -> str:
    url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("no database URL: set Config.attributes['url'] or sqlalchemy.url")
    return str(url)


def _configure(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        version_table=models.VERSION_TABLE,
        include_name=migrate.include_name,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=migrate.compare_type,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        version_table=models.VERSION_TABLE,
        include_name=migrate.include_name,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection)
        return
    engine = create_store_engine(_url())
    try:
        with engine.begin() as connection:
            _configure(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
