"""The scrubber's cursor and findings: one row per segment it has re-read.

``checked_ms`` orders the rolling pass (never-checked segments first, then the longest
unchecked); ``finding`` and ``finding_key`` hold what was wrong and with which object, until a
later check passes.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "remote_segment_scrubs",
        sa.Column("segment_id", sa.String(64), primary_key=True),
        sa.Column("checked_ms", sa.BigInteger(), nullable=False),
        sa.Column("checked_bytes", sa.BigInteger(), nullable=False),
        sa.Column("finding", sa.Text(), nullable=True),
        sa.Column("finding_key", sa.Text(), nullable=True),
    )
    op.create_index("ix_remote_segment_scrubs_checked", "remote_segment_scrubs", ["checked_ms"])


def downgrade() -> None:
    op.drop_index("ix_remote_segment_scrubs_checked", "remote_segment_scrubs")
    op.drop_table("remote_segment_scrubs")
