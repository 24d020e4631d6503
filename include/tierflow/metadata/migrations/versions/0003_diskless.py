"""Diskless topics (KIP-1163): the diskless coordinator's tables.

``diskless_topics`` (which topics are diskless), ``diskless_logs`` (per partition: log start
offset, WAL start offset, high watermark), ``diskless_wal_objects`` (one row per WAL segment
object: total and used size, state, timestamps) and ``diskless_batches`` (the batch
coordinates and the offsets the coordinator assigned). The models are in
``tierflow.diskless.models``. IF NOT EXISTS everywhere, as in 0001.

Revision ID: 0003
Revises: 0002
Create Date: 2026-06-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY = sa.String(64)
ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    _create_diskless_topics()
    _create_diskless_logs()
    _create_diskless_wal_objects()
    _create_diskless_batches()


def _create_diskless_topics() -> None:
    """Which topics are diskless, and their timestamp type."""
    op.create_table(
        "diskless_topics",
        sa.Column("topic_id", KEY, nullable=False),
        sa.Column("timestamp_type", sa.String(16), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("topic_id"),
        sa.ForeignKeyConstraint(
            ["topic_id"], ["topics.topic_id"], name="fk_diskless_topics_topic_id_topics"
        ),
        if_not_exists=True,
    )


def _create_diskless_logs() -> None:
    """Per partition: log start offset, WAL start offset, high watermark."""
    op.create_table(
        "diskless_logs",
        sa.Column("topic_id", KEY, nullable=False),
        sa.Column("partition", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("log_start_offset", sa.BigInteger(), nullable=False),
        sa.Column("diskless_start_offset", sa.BigInteger(), nullable=False),
        sa.Column("high_watermark", sa.BigInteger(), nullable=False),
        sa.Column("leader_epoch", sa.Integer(), nullable=False),
        sa.Column("byte_size", sa.BigInteger(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("topic_id", "partition"),
        sa.ForeignKeyConstraint(
            ["topic_id"],
            ["diskless_topics.topic_id"],
            name="fk_diskless_logs_topic_id_diskless_topics",
        ),
        if_not_exists=True,
    )


def _create_diskless_wal_objects() -> None:
    """One row per WAL segment object, indexed for the delete and age scans."""
    op.create_table(
        "diskless_wal_objects",
        sa.Column("object_id", ROW_ID, autoincrement=True, nullable=False),
        sa.Column("object_key", sa.Text(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("total_size", sa.BigInteger(), nullable=False),
        sa.Column("used_size", sa.BigInteger(), nullable=False),
        sa.Column("writer", sa.Text(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("committed_ms", sa.BigInteger(), nullable=True),
        sa.Column("marked_for_deletion_ms", sa.BigInteger(), nullable=True),
        sa.Column("delete_after_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("object_id"),
        sa.UniqueConstraint("object_key", name="uq_diskless_wal_objects_object_key"),
        if_not_exists=True,
    )
    op.create_index(
        "ix_diskless_wal_objects_state_deadline",
        "diskless_wal_objects",
        ["state", "delete_after_ms"],
        if_not_exists=True,
    )
    op.create_index(
        "ix_diskless_wal_objects_state_created",
        "diskless_wal_objects",
        ["state", "created_ms"],
        if_not_exists=True,
    )


def _create_diskless_batches() -> None:
    """Batch coordinates in WAL objects and the offsets the coordinator assigned."""
    op.create_table(
        "diskless_batches",
        sa.Column("batch_id", ROW_ID, autoincrement=True, nullable=False),
        sa.Column("object_id", sa.BigInteger(), nullable=False),
        sa.Column("byte_offset", sa.BigInteger(), nullable=False),
        sa.Column("byte_size", sa.BigInteger(), nullable=False),
        sa.Column("topic_id", KEY, nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("base_offset", sa.BigInteger(), nullable=False),
        sa.Column("last_offset", sa.BigInteger(), nullable=False),
        sa.Column("leader_epoch", sa.Integer(), nullable=False),
        sa.Column("timestamp_type", sa.String(16), nullable=False),
        sa.Column("batch_max_timestamp", sa.BigInteger(), nullable=False),
        sa.Column("append_time_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("batch_id"),
        sa.ForeignKeyConstraint(
            ["object_id"],
            ["diskless_wal_objects.object_id"],
            name="fk_diskless_batches_object_id_diskless_wal_objects",
        ),
        sa.ForeignKeyConstraint(
            ["topic_id", "partition"],
            ["diskless_logs.topic_id", "diskless_logs.partition"],
            name="fk_diskless_batches_partition_diskless_logs",
        ),
        sa.UniqueConstraint(
            "topic_id", "partition", "base_offset", name="uq_diskless_batches_tp_base"
        ),
        if_not_exists=True,
    )
    op.create_index(
        "ix_diskless_batches_tp_last",
        "diskless_batches",
        ["topic_id", "partition", "last_offset"],
        if_not_exists=True,
    )
    op.create_index(
        "ix_diskless_batches_object_id", "diskless_batches", ["object_id"], if_not_exists=True
    )


def downgrade() -> None:
    op.drop_index("ix_diskless_batches_object_id", table_name="diskless_batches", if_exists=True)
    op.drop_index("ix_diskless_batches_tp_last", table_name="diskless_batches", if_exists=True)
    op.drop_table("diskless_batches", if_exists=True)
    op.drop_index(
        "ix_diskless_wal_objects_state_created",
        table_name="diskless_wal_objects",
        if_exists=True,
    )
    op.drop_index(
        "ix_diskless_wal_objects_state_deadline",
        table_name="diskless_wal_objects",
        if_exists=True,
    )
    op.drop_table("diskless_wal_objects", if_exists=True)
    op.drop_table("diskless_logs", if_exists=True)
    op.drop_table("diskless_topics", if_exists=True)
