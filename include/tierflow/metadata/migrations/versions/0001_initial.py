"""Initial metadata store schema: topics, partitions, segments, objects, deletes, events.

IF NOT EXISTS everywhere, so processes that migrate an empty database at the same time do not
fail each other (see tierflow.metadata.migrate.upgrade).

Revision ID: 0001
Revises:
Create Date: 2025-11-21
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY = sa.String(64)  # Kafka Uuid text (22 chars) with room to spare


def upgrade() -> None:
    _create_topics()
    _create_partitions()
    _create_remote_log_segments()
    _create_remote_segment_objects()
    _create_remote_partition_deletes()
    _create_metadata_events()


def _create_topics() -> None:
    """One row per Kafka topic: its tiering configs and tiered-storage state."""
    op.create_table(
        "topics",
        sa.Column("topic_id", KEY, nullable=False),
        sa.Column("name", sa.String(249), nullable=False),
        sa.Column("remote_storage_enable", sa.Boolean(), nullable=False),
        sa.Column("retention_ms", sa.BigInteger(), nullable=False),
        sa.Column("retention_bytes", sa.BigInteger(), nullable=False),
        sa.Column("local_retention_ms", sa.BigInteger(), nullable=False),
        sa.Column("local_retention_bytes", sa.BigInteger(), nullable=False),
        sa.Column("remote_log_disable_policy", sa.String(16), nullable=False),
        sa.Column("remote_log_copy_disable", sa.Boolean(), nullable=False),
        sa.Column("tiered_state", sa.String(16), nullable=False),
        sa.Column("tiered_epoch", sa.Integer(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("topic_id"),
        sa.UniqueConstraint("name", name="uq_topics_name"),
        if_not_exists=True,
    )


def _create_partitions() -> None:
    """One row per partition: its offsets and its lease."""
    op.create_table(
        "partitions",
        sa.Column("topic_id", KEY, nullable=False),
        sa.Column("partition", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("log_start_offset", sa.BigInteger(), nullable=False),
        sa.Column("local_log_start_offset", sa.BigInteger(), nullable=False),
        sa.Column("highest_remote_offset", sa.BigInteger(), nullable=False),
        sa.Column("lease_owner", sa.String(255), nullable=True),
        sa.Column("lease_expires_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("topic_id", "partition"),
        sa.ForeignKeyConstraint(
            ["topic_id"], ["topics.topic_id"], name="fk_partitions_topic_id_topics"
        ),
        if_not_exists=True,
    )


def _create_remote_log_segments() -> None:
    """One row per remote segment (RemoteLogSegmentMetadata), indexed by offset and by state."""
    op.create_table(
        "remote_log_segments",
        sa.Column("segment_id", KEY, nullable=False),
        sa.Column("topic_id", KEY, nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("start_offset", sa.BigInteger(), nullable=False),
        sa.Column("end_offset", sa.BigInteger(), nullable=False),
        sa.Column("max_timestamp_ms", sa.BigInteger(), nullable=False),
        sa.Column("leader_epoch", sa.Integer(), nullable=False),
        sa.Column("segment_leader_epochs", sa.Text(), nullable=False),
        sa.Column("segment_size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("tiered_epoch", sa.Integer(), nullable=False),
        sa.Column("event_timestamp_ms", sa.BigInteger(), nullable=False),
        sa.Column("custom_metadata", sa.LargeBinary(), nullable=True),
        sa.Column("txn_index_empty", sa.Boolean(), nullable=False),
        sa.Column("owner", sa.String(255), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("segment_id"),
        sa.ForeignKeyConstraint(
            ["topic_id", "partition"],
            ["partitions.topic_id", "partitions.partition"],
            name="fk_remote_log_segments_partition_partitions",
        ),
        if_not_exists=True,
    )
    op.create_index(
        "ix_remote_log_segments_tp_start",
        "remote_log_segments",
        ["topic_id", "partition", "start_offset"],
        if_not_exists=True,
    )
    op.create_index(
        "ix_remote_log_segments_tp_state",
        "remote_log_segments",
        ["topic_id", "partition", "state"],
        if_not_exists=True,
    )


def _create_remote_segment_objects() -> None:
    """The objects (log, indexes, ...) a remote segment was uploaded as."""
    op.create_table(
        "remote_segment_objects",
        sa.Column("segment_id", KEY, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("segment_id", "kind"),
        sa.ForeignKeyConstraint(
            ["segment_id"],
            ["remote_log_segments.segment_id"],
            name="fk_remote_segment_objects_segment_id_remote_log_segments",
        ),
        if_not_exists=True,
    )


def _create_remote_partition_deletes() -> None:
    """Partitions whose remote data is being deleted (Kafka's partition delete states)."""
    op.create_table(
        "remote_partition_deletes",
        sa.Column("topic_id", KEY, nullable=False),
        sa.Column("partition", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("event_timestamp_ms", sa.BigInteger(), nullable=False),
        sa.Column("marks", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("topic_id", "partition"),
        sa.ForeignKeyConstraint(
            ["topic_id", "partition"],
            ["partitions.topic_id", "partitions.partition"],
            name="fk_remote_partition_deletes_partition_partitions",
        ),
        if_not_exists=True,
    )


def _create_metadata_events() -> None:
    """The audit trail of state changes, looked up by partition or segment."""
    op.create_table(
        "metadata_events",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("event_timestamp_ms", sa.BigInteger(), nullable=False),
        sa.Column("entity", sa.String(32), nullable=False),
        sa.Column("topic_id", KEY, nullable=False),
        sa.Column("partition", sa.Integer(), nullable=True),
        sa.Column("segment_id", KEY, nullable=True),
        sa.Column("from_state", sa.String(32), nullable=True),
        sa.Column("to_state", sa.String(32), nullable=False),
        sa.Column("actor", sa.String(255), nullable=False),
        sa.Column("details", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        if_not_exists=True,
    )
    op.create_index(
        "ix_metadata_events_tp", "metadata_events", ["topic_id", "partition"], if_not_exists=True
    )
    op.create_index(
        "ix_metadata_events_segment_id", "metadata_events", ["segment_id"], if_not_exists=True
    )


def downgrade() -> None:
    op.drop_index("ix_metadata_events_segment_id", table_name="metadata_events", if_exists=True)
    op.drop_index("ix_metadata_events_tp", table_name="metadata_events", if_exists=True)
    op.drop_table("metadata_events", if_exists=True)
    op.drop_table("remote_partition_deletes", if_exists=True)
    op.drop_table("remote_segment_objects", if_exists=True)
    op.drop_index(
        "ix_remote_log_segments_tp_state", table_name="remote_log_segments", if_exists=True
    )
    op.drop_index(
        "ix_remote_log_segments_tp_start", table_name="remote_log_segments", if_exists=True
    )
    op.drop_table("remote_log_segments", if_exists=True)
    op.drop_table("partitions", if_exists=True)
    op.drop_table("topics", if_exists=True)
