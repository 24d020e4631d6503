"""The Iceberg export: the topic configs ``tierflow.iceberg.export``,
``tierflow.iceberg.value.format`` and ``tierflow.iceberg.retention.wait.max.ms`` as columns of
``topics``, with the defaults every topic registered before has (no export); and
``partitions.iceberg_exported_offset``, the last offset committed to the topic's table, which
remote retention waits on.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _columns() -> list[sa.Column]:
    """Fresh each time: a Column belongs to the one table it is added to."""
    return [
        sa.Column("iceberg_export", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("iceberg_value_format", sa.String(16), nullable=False, server_default="none"),
        sa.Column(
            "iceberg_retention_wait_max_ms", sa.BigInteger(), nullable=False, server_default="-1"
        ),
    ]


def _exported() -> sa.Column:
    return sa.Column(
        "iceberg_exported_offset", sa.BigInteger(), nullable=False, server_default="-1"
    )


def upgrade() -> None:
    for column in _columns():
        op.add_column("topics", column)
    op.add_column("partitions", _exported())


def downgrade() -> None:
    """SQLite drops a column in place (3.35 and later): no table rebuild, which the foreign
    keys referencing ``topics`` would refuse."""
    op.drop_column("partitions", _exported().name)
    for column in reversed(_columns()):
        op.drop_column("topics", column.name)
