"""Remote compaction: the compaction configs of a topic as columns of ``topics``, with Kafka's
defaults for every topic registered before, and each partition's clean section.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TOPIC_COLUMNS = (
    ("segment_bytes", sa.BigInteger(), str(1 << 30)),
    ("delete_retention_ms", sa.BigInteger(), "86400000"),
    ("min_compaction_lag_ms", sa.BigInteger(), "0"),
    ("max_compaction_lag_ms", sa.BigInteger(), str((1 << 63) - 1)),
    ("min_cleanable_dirty_ratio", sa.Float(), "0.5"),
)


def upgrade() -> None:
    for name, kind, default in TOPIC_COLUMNS:
        op.add_column("topics", sa.Column(name, kind, nullable=False, server_default=default))
    op.add_column(
        "partitions",
        sa.Column("remote_cleaned_offset", sa.BigInteger(), nullable=False, server_default="-1"),
    )


def downgrade() -> None:
    """SQLite drops a column in place (3.35 and later), as 0004's downgrade does."""
    op.drop_column("partitions", "remote_cleaned_offset")
    for name, _kind, _default in reversed(TOPIC_COLUMNS):
        op.drop_column("topics", name)
