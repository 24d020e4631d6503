"""Speaking ``__remote_log_metadata``: who copies each topic, who wrote each segment, an outbox.

``topics.copier`` is ``tierflow`` (tierflow copies, expires and removes the topic) or
``broker`` (the brokers' own RemoteLogManager does, and tierflow follows it).
``remote_log_segments.writer`` says whose copy a segment is: a broker-written one is mirrored
from the metadata topic and never copied, expired or removed by tierflow. The outbox holds
each transition of a tierflow-copied topic as the record a broker would write, until the
metadata topic has it; ``remote_log_metadata_positions`` keeps how far the outbox has looked
at the history and how far the mirror has read each metadata partition.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

EVENT_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    copier = sa.Column("copier", sa.String(16), nullable=False, server_default="tierflow")
    op.add_column("topics", copier)
    writer = sa.Column("writer", sa.String(16), nullable=False, server_default="tierflow")
    op.add_column("remote_log_segments", writer)
    op.create_table(
        "remote_log_metadata_outbox",
        sa.Column("event_id", EVENT_ID, autoincrement=False, nullable=False),
        sa.Column("topic_id", sa.String(64), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("metadata_partition", sa.Integer(), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("published_offset", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("event_id"),
    )
    op.create_index(
        "ix_remote_log_metadata_outbox_published",
        "remote_log_metadata_outbox",
        ["metadata_partition", "published_offset"],
    )
    op.create_table(
        "remote_log_metadata_positions",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    """SQLite drops a column in place (3.35 and later), as 0007's downgrade does."""
    op.drop_table("remote_log_metadata_positions")
    op.drop_index("ix_remote_log_metadata_outbox_published", "remote_log_metadata_outbox")
    op.drop_table("remote_log_metadata_outbox")
    op.drop_column("remote_log_segments", "writer")
    op.drop_column("topics", "copier")
