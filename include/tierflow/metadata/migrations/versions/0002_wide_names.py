"""Widen topic names (for retired names) and make actors and lease owners TEXT.

0001 sized ``topics.name`` for a Kafka name (249), but a retired name adds "#deleted-" and
the topic id; and lease owners and actors embed topic names and Airflow run ids, which can
exceed 255. PostgreSQL enforces VARCHAR lengths, so those writes failed there.

SQLite ignores declared lengths (every string is TEXT), so nothing changes on SQLite: altering
a column there means rebuilding the table, and these tables are referenced by foreign keys.
``tierflow.metadata.migrate.compare_type`` treats the string types as equal on SQLite.

Revision ID: 0002
Revises: 0001
Create Date: 2026-05-02
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, column, nullable, type in 0001, type from here on)
CHANGES: list[tuple[str, str, bool, sa.types.TypeEngine, sa.types.TypeEngine]] = [
    ("topics", "name", False, sa.String(249), sa.String(512)),
    ("partitions", "lease_owner", True, sa.String(255), sa.Text()),
    ("remote_log_segments", "owner", False, sa.String(255), sa.Text()),
    ("metadata_events", "actor", False, sa.String(255), sa.Text()),
]


def _enforces_lengths() -> bool:
    return op.get_context().dialect.name != "sqlite"


def upgrade() -> None:
    if not _enforces_lengths():
        return
    for table, column, nullable, old, new in CHANGES:
        op.alter_column(table, column, type_=new, existing_type=old, existing_nullable=nullable)


def downgrade() -> None:
    """Fails if a longer value was stored since: narrowing would lose it."""
    if not _enforces_lengths():
        return
    for table, column, nullable, old, new in reversed(CHANGES):
        op.alter_column(table, column, type_=old, existing_type=new, existing_nullable=nullable)
