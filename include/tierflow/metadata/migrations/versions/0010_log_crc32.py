"""The CRC-32 of the bytes a copy uploaded as a segment's log, recorded with
COPY_SEGMENT_FINISHED.

The scrubber's repair copies a damaged segment again only from a local segment with the same
bytes; the remote copy is what is damaged, so what it held must have been recorded when it was
made. Segments copied before this revision have none, and are not repaired.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("remote_log_segments", sa.Column("log_crc32", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    """SQLite drops a column in place (3.35 and later), as 0004's downgrade does."""
    op.drop_column("remote_log_segments", "log_crc32")
