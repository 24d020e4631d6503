"""Whether the store's schema is at the packaged head, asked without Alembic: every process
opens the store, and loading Alembic (0.1-0.2 s) to learn that there is nothing to migrate was
much of a short command's start (``tierflow status``). Any other answer goes to Alembic
(migrate.py), which decides and migrates."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from tierflow.metadata.models import VERSION_TABLE

VERSIONS_DIR = Path(__file__).resolve().parent / "migrations" / "versions"


def packaged_head() -> str:
    """The newest packaged revision. Revisions are numbered and linear (0001, 0002, ...),
    each file named after its id; tests/metadata/test_schema_version.py holds this to
    Alembic's own head."""
    return max(path.name.split("_", 1)[0] for path in VERSIONS_DIR.glob("[0-9]*_*.py"))


def stored_revision(engine: Engine) -> str | None:
    """The revision the store records; None before its first migration (no version table)."""
    try:
        with engine.connect() as connection:
            rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
    except DBAPIError:
        return None
    return rows[0][0] if len(rows) == 1 else None


def at_head(engine: Engine) -> bool:
    return stored_revision(engine) == packaged_head()
