"""Run the packaged Alembic migrations programmatically; no alembic.ini on disk is needed.

The store's own connection is handed to env.py through ``Config.attributes`` so the SQLite
pragmas apply to the migration too. The version table has its own name so the schema can share
a database with Airflow's (which owns ``alembic_version``).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from tierflow.metadata.models import VERSION_TABLE

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
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


def downgrade(engine: Engine, revision: str = "base") -> None:
    _run(engine, "downgrade", revision)


def _run(engine: Engine, direction: str, revision: str) -> None:
    config = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        if direction == "upgrade":
            command.upgrade(config, revision)
        else:
            command.downgrade(config, revision)
