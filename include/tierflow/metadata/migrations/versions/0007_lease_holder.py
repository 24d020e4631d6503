"""Leases a rerun can take: when each was taken, and which CLI process holds it.

``lease_taken_ms`` lets another owner judge a lease with the TTL configured when it looks, not
the one the holder had; ``lease_holder`` names the holding process, so a rerun on the same host
takes over a lease whose process is gone (metadata.lease_holder). Leases taken before have
neither: they are judged by ``lease_expires_ms`` as before.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("partitions", sa.Column("lease_taken_ms", sa.BigInteger(), nullable=True))
    op.add_column("partitions", sa.Column("lease_holder", sa.Text(), nullable=True))


def downgrade() -> None:
    """SQLite drops a column in place (3.35 and later), as 0006's downgrade does."""
    op.drop_column("partitions", "lease_holder")
    op.drop_column("partitions", "lease_taken_ms")
