"""SQL tables of the diskless coordinator, in the metadata store's database.

Same conventions as ``tierflow.metadata.models``: BIGINT offsets, sizes and timestamps,
explicit constraint and index names (so the Alembic migration and ``compare_metadata``
agree), states stored by name; the column shapes both share come from there.

- ``diskless_topics``: which registered topics are diskless (KIP-1163's ``diskless.enable``,
  fixed at creation) and their ``message.timestamp.type``.
- ``diskless_logs``: one row per diskless partition: log start offset, the first offset still
  held in WAL objects (below it: tiered segments), and the high watermark (the next offset the
  coordinator assigns).
- ``diskless_wal_objects``: one row per WAL segment object, with total and used size.
- ``diskless_batches``: one row per committed batch: where it lies and which offsets it got.
"""

from __future__ import annotations

from enum import StrEnum

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from tierflow.metadata.models import (
    EVENT_ID_TYPE,
    partition_number_key,
    references,
    references_partition,
)

# The store's auto-incrementing id: BIGINT, but INTEGER on SQLite (only its rowid alias counts).
ROW_ID_TYPE = EVENT_ID_TYPE
CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"
TIMESTAMP_TYPES = (CREATE_TIME, LOG_APPEND_TIME)


class WalObjectState(StrEnum):
    """A WAL object's life: registered before its upload, committed, then marked for deletion.

    UPLOADING rows older than the uncommitted grace period are garbage (an upload whose commit
    never came); DELETING rows are deleted from storage once ``delete_after_ms`` has passed, so
    that fetches that already hold their coordinates can finish.
    """

    UPLOADING = "uploading"
    COMMITTED = "committed"
    DELETING = "deleting"


class DisklessTopic(SQLModel, table=True):
    __tablename__ = "diskless_topics"
    __table_args__ = (references("diskless_topics", "topic_id", "topics"),)

    topic_id: str = Field(primary_key=True, sa_type=sa.String(64))
    timestamp_type: str = Field(default=CREATE_TIME, sa_type=sa.String(16))
    created_ms: int = Field(sa_type=sa.BigInteger)


class DisklessLog(SQLModel, table=True):
    __tablename__ = "diskless_logs"
    __table_args__ = (references("diskless_logs", "topic_id", "diskless_topics"),)

    topic_id: str = Field(primary_key=True, sa_type=sa.String(64))
    partition: int = partition_number_key()
    log_start_offset: int = Field(default=0, sa_type=sa.BigInteger)
    diskless_start_offset: int = Field(default=0, sa_type=sa.BigInteger)
    high_watermark: int = Field(default=0, sa_type=sa.BigInteger)
    leader_epoch: int = Field(default=0, sa_type=sa.Integer)
    byte_size: int = Field(default=0, sa_type=sa.BigInteger)  # bytes of the live batches
    updated_ms: int = Field(sa_type=sa.BigInteger)


class WalObject(SQLModel, table=True):
    __tablename__ = "diskless_wal_objects"
    __table_args__ = (
        sa.UniqueConstraint("object_key", name="uq_diskless_wal_objects_object_key"),
        sa.Index("ix_diskless_wal_objects_state_deadline", "state", "delete_after_ms"),
        sa.Index("ix_diskless_wal_objects_state_created", "state", "created_ms"),
    )

    object_id: int | None = Field(default=None, primary_key=True, sa_type=ROW_ID_TYPE)
    object_key: str = Field(sa_type=sa.Text)
    state: str = Field(sa_type=sa.String(16))
    total_size: int = Field(sa_type=sa.BigInteger)
    used_size: int = Field(default=0, sa_type=sa.BigInteger)
    writer: str = Field(sa_type=sa.Text)
    created_ms: int = Field(sa_type=sa.BigInteger)
    committed_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    marked_for_deletion_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    delete_after_ms: int | None = Field(default=None, sa_type=sa.BigInteger)

    @property
    def object_state(self) -> WalObjectState:
        return WalObjectState(self.state)


class DisklessBatch(SQLModel, table=True):
    """One committed batch. The unique (partition, base offset) index is the last line of
    defence against two commits receiving the same offsets."""

    __tablename__ = "diskless_batches"
    __table_args__ = (
        references("diskless_batches", "object_id", "diskless_wal_objects"),
        references_partition("diskless_batches", "diskless_logs"),
        sa.UniqueConstraint(
            "topic_id", "partition", "base_offset", name="uq_diskless_batches_tp_base"
        ),
        sa.Index("ix_diskless_batches_tp_last", "topic_id", "partition", "last_offset"),
        sa.Index("ix_diskless_batches_object_id", "object_id"),
    )

    batch_id: int | None = Field(default=None, primary_key=True, sa_type=ROW_ID_TYPE)
    object_id: int = Field(sa_type=sa.BigInteger)
    byte_offset: int = Field(sa_type=sa.BigInteger)
    byte_size: int = Field(sa_type=sa.BigInteger)
    topic_id: str = Field(sa_type=sa.String(64))
    partition: int = Field(sa_type=sa.Integer)
    base_offset: int = Field(sa_type=sa.BigInteger)
    last_offset: int = Field(sa_type=sa.BigInteger)
    leader_epoch: int = Field(sa_type=sa.Integer)
    timestamp_type: str = Field(sa_type=sa.String(16))
    batch_max_timestamp: int = Field(sa_type=sa.BigInteger)  # the producer's (CreateTime)
    append_time_ms: int = Field(sa_type=sa.BigInteger)  # the commit: LogAppendTime

    @property
    def effective_timestamp(self) -> int:
        """The batch's max timestamp as a classic segment would hold it (retention uses it)."""
        if self.timestamp_type == LOG_APPEND_TIME:
            return self.append_time_ms
        return self.batch_max_timestamp


DISKLESS_TABLES: tuple[type[SQLModel], ...] = (DisklessTopic, DisklessLog, WalObject, DisklessBatch)
