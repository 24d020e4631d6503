"""Compacted topics: the topic config ``cleanup.policy`` as a column of ``topics``, with the
value every topic registered before has (``delete``: tierflow refused the others).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "topics",
        sa.Column("cleanup_policy", sa.String(32), nullable=False, server_default="delete"),
    )


def downgrade() -> None:
    """SQLite drops a column in place (3.35 and later), as 0004's downgrade does."""
    op.drop_column("topics", "cleanup_policy")
