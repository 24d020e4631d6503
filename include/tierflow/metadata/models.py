"""SQL tables of the metadata store: tierflow's durable stand-in for Kafka's RLMM cache.

States are stored by name so the database reads without a lookup table. Offsets, sizes and
timestamps are BIGINT because PostgreSQL's INTEGER is 32-bit, and string lengths fit the
longest value Kafka allows because PostgreSQL enforces them (SQLite does not). Constraint and
index names are explicit so the Alembic migrations create exactly these and
``compare_metadata`` agrees.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from tierflow.metadata.log_config import FIELD_NAMES, TopicConfig
from tierflow.metadata.states import RemoteLogSegmentState, RemotePartitionDeleteState, TieredState

# SQLite only auto-increments an INTEGER PRIMARY KEY (the rowid alias), not a BIGINT one.
EVENT_ID_TYPE = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# A Kafka topic name has at most 249 characters; a retired one adds "#deleted-" and the topic
# id (see topic_registry.retired_topic_name), which PostgreSQL's VARCHAR must hold too.
TOPIC_NAME_TYPE = sa.String(512)
# Lease owners and actors are built from topic names and Airflow run ids: no useful bound.
ACTOR_TYPE = sa.Text
# topics.copier and remote_log_segments.writer: tierflow's copy, or a broker's.
TIERFLOW_COPIER = "tierflow"
BROKER_COPIER = "broker"


def id_key() -> Any:
    """The key column of a table keyed by a topic or segment id (alone, or with more columns):
    one column type for every such table, so the foreign keys to them agree."""
    return Field(primary_key=True, sa_type=sa.String(64))


def partition_number_key() -> Any:
    """The ``partition`` column of a table keyed by (topic id, partition number)."""
    return Field(primary_key=True, sa_type=sa.Integer, sa_column_kwargs={"autoincrement": False})


def references(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    """The foreign key from ``table``'s ``column`` to the column of that name in ``target``,
    named fk_<table>_<column>_<target> as in the migrations."""
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.{column}"], name=f"fk_{table}_{column}_{target}"
    )


def references_partition(table: str, target: str = "partitions") -> sa.ForeignKeyConstraint:
    """The foreign key from ``table``'s (topic id, partition) to its row in ``target``."""
    return sa.ForeignKeyConstraint(
        ["topic_id", "partition"],
        [f"{target}.topic_id", f"{target}.partition"],
        name=f"fk_{table}_partition_{target}",
    )


class SegmentObjectKind(StrEnum):
    """The objects stored per segment: one per file in the plain layout (the log plus
    IndexType), or Aiven's three in the chunked layout (``log``, ``indexes``, ``rsm-manifest``).
    """

    LOG = "log"
    INDEX = "index"
    TIMEINDEX = "timeindex"
    TXNINDEX = "txnindex"
    SNAPSHOT = "snapshot"
    LEADER_EPOCH_CHECKPOINT = "leader_epoch_checkpoint"
    INDEXES = "indexes"
    RSM_MANIFEST = "rsm-manifest"


class Topic(SQLModel, table=True):
    __tablename__ = "topics"
    __table_args__ = (sa.UniqueConstraint("name", name="uq_topics_name"),)

    topic_id: str = id_key()
    name: str = Field(sa_type=TOPIC_NAME_TYPE)
    remote_storage_enable: bool = Field(default=False, sa_type=sa.Boolean)
    retention_ms: int = Field(default=604_800_000, sa_type=sa.BigInteger)
    retention_bytes: int = Field(default=-1, sa_type=sa.BigInteger)
    local_retention_ms: int = Field(default=-2, sa_type=sa.BigInteger)
    local_retention_bytes: int = Field(default=-2, sa_type=sa.BigInteger)
    remote_log_disable_policy: str = Field(default="retain", sa_type=sa.String(16))
    remote_log_copy_disable: bool = Field(default=False, sa_type=sa.Boolean)
    cleanup_policy: str = Field(default="delete", sa_type=sa.String(32))
    segment_bytes: int = Field(default=1 << 30, sa_type=sa.BigInteger)
    delete_retention_ms: int = Field(default=86_400_000, sa_type=sa.BigInteger)
    min_compaction_lag_ms: int = Field(default=0, sa_type=sa.BigInteger)
    max_compaction_lag_ms: int = Field(default=(1 << 63) - 1, sa_type=sa.BigInteger)
    min_cleanable_dirty_ratio: float = Field(default=0.5, sa_type=sa.Float)
    iceberg_export: bool = Field(default=False, sa_type=sa.Boolean)
    iceberg_value_format: str = Field(default="none", sa_type=sa.String(16))
    iceberg_retention_wait_max_ms: int = Field(default=-1, sa_type=sa.BigInteger)
    tiered_state: str = Field(default=TieredState.DISABLED.value, sa_type=sa.String(16))
    tiered_epoch: int = Field(default=0, sa_type=sa.Integer)
    # Who copies, expires and removes the topic: "tierflow", or "broker" once handed over (the
    # brokers' RemoteLogManager does, and tierflow follows __remote_log_metadata).
    copier: str = Field(default="tierflow", sa_type=sa.String(16))
    updated_ms: int = Field(sa_type=sa.BigInteger)

    @property
    def config(self) -> TopicConfig:
        """The row's config columns, which are named after TopicConfig's fields."""
        return TopicConfig(**{field: getattr(self, field) for field in FIELD_NAMES})

    @property
    def state(self) -> TieredState:
        return TieredState(self.tiered_state)

    @property
    def copied_by_tierflow(self) -> bool:
        """False once handed over: the brokers copy, expire and remove it, tierflow follows."""
        return self.copier == TIERFLOW_COPIER


class Partition(SQLModel, table=True):
    __tablename__ = "partitions"
    __table_args__ = (references("partitions", "topic_id", "topics"),)

    topic_id: str = id_key()
    partition: int = partition_number_key()
    log_start_offset: int = Field(default=0, sa_type=sa.BigInteger)
    local_log_start_offset: int = Field(default=0, sa_type=sa.BigInteger)
    highest_remote_offset: int = Field(default=-1, sa_type=sa.BigInteger)
    lease_owner: str | None = Field(default=None, sa_type=ACTOR_TYPE)
    # The taking's token: its expiry as the taker's TTL had it (partition_registry).
    lease_expires_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    # When the lease was taken: other owners judge it with the TTL configured when they look.
    lease_taken_ms: int | None = Field(default=None, sa_type=sa.BigInteger)
    # The CLI process holding it (metadata.lease_holder.LeaseHolder as JSON); None: a task's.
    lease_holder: str | None = Field(default=None, sa_type=sa.Text)
    # The last offset committed to the topic's Iceberg table (-1: none); retention waits on it.
    iceberg_exported_offset: int = Field(default=-1, sa_type=sa.BigInteger)
    # The end of the range the remote compaction last compacted (-1: none): its clean section.
    remote_cleaned_offset: int = Field(default=-1, sa_type=sa.BigInteger)


class RemoteLogSegment(SQLModel, table=True):
    """One RemoteLogSegmentMetadata; DELETE_SEGMENT_FINISHED rows stay as tombstones."""

    __tablename__ = "remote_log_segments"
    __table_args__ = (
        references_partition("remote_log_segments"),
        sa.Index("ix_remote_log_segments_tp_start", "topic_id", "partition", "start_offset"),
        sa.Index("ix_remote_log_segments_tp_state", "topic_id", "partition", "state"),
    )

    segment_id: str = id_key()
    topic_id: str = Field(sa_type=sa.String(64))
    partition: int = Field(sa_type=sa.Integer)
    start_offset: int = Field(sa_type=sa.BigInteger)
    end_offset: int = Field(sa_type=sa.BigInteger)
    max_timestamp_ms: int = Field(sa_type=sa.BigInteger)
    leader_epoch: int = Field(sa_type=sa.Integer)
    segment_leader_epochs: str = Field(sa_type=sa.Text)
    segment_size_bytes: int = Field(sa_type=sa.BigInteger)
    state: str = Field(sa_type=sa.String(32))
    tiered_epoch: int = Field(default=0, sa_type=sa.Integer)
    event_timestamp_ms: int = Field(sa_type=sa.BigInteger)
    custom_metadata: bytes | None = Field(default=None, sa_type=sa.LargeBinary)
    txn_index_empty: bool = Field(default=True, sa_type=sa.Boolean)
    # CRC-32C of the bytes uploaded as the log (None: not copied by tierflow, or copied before
    # it was recorded): what a repair compares a local segment with (lifecycle/scrub/repair.py).
    log_crc32c: int | None = Field(default=None, sa_type=sa.BigInteger)
    # The zlib CRC-32 that copies recorded before 0011 in its place; a repair compares with it.
    log_crc32: int | None = Field(default=None, sa_type=sa.BigInteger)
    # Whose copy it is: "tierflow", or "broker" (mirrored from __remote_log_metadata; tierflow
    # never copies, expires or removes it).
    writer: str = Field(default="tierflow", sa_type=sa.String(16))
    owner: str = Field(sa_type=ACTOR_TYPE)
    created_ms: int = Field(sa_type=sa.BigInteger)

    @property
    def leader_epochs(self) -> list[tuple[int, int]]:
        """``segment_leader_epochs`` decoded: ascending (epoch, start offset) pairs."""
        return [(int(epoch), int(start)) for epoch, start in json.loads(self.segment_leader_epochs)]

    @property
    def segment_state(self) -> RemoteLogSegmentState:
        return RemoteLogSegmentState(self.state)


class RemoteSegmentObject(SQLModel, table=True):
    __tablename__ = "remote_segment_objects"
    __table_args__ = (references("remote_segment_objects", "segment_id", "remote_log_segments"),)

    segment_id: str = id_key()
    kind: str = Field(primary_key=True, sa_type=sa.String(32))
    key: str = Field(sa_type=sa.Text)
    size: int = Field(sa_type=sa.BigInteger)
    sha256: str = Field(sa_type=sa.String(64))


class RemotePartitionDelete(SQLModel, table=True):
    __tablename__ = "remote_partition_deletes"
    __table_args__ = (references_partition("remote_partition_deletes"),)

    topic_id: str = id_key()
    partition: int = partition_number_key()
    state: str = Field(sa_type=sa.String(32))
    event_timestamp_ms: int = Field(sa_type=sa.BigInteger)
    marks: int = Field(default=1, sa_type=sa.Integer)

    @property
    def delete_state(self) -> RemotePartitionDeleteState:
        return RemotePartitionDeleteState(self.state)


class MetadataEvent(SQLModel, table=True):
    """Append-only history, tierflow's ``__remote_log_metadata``: one row per transition.

    No foreign keys, so the history outlives whatever it describes.
    """

    __tablename__ = "metadata_events"
    __table_args__ = (
        sa.Index("ix_metadata_events_tp", "topic_id", "partition"),
        sa.Index("ix_metadata_events_segment_id", "segment_id"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=EVENT_ID_TYPE)
    event_timestamp_ms: int = Field(sa_type=sa.BigInteger)
    entity: str = Field(sa_type=sa.String(32))
    topic_id: str = Field(sa_type=sa.String(64))
    partition: int | None = Field(default=None, sa_type=sa.Integer)
    segment_id: str | None = Field(default=None, sa_type=sa.String(64))
    from_state: str | None = Field(default=None, sa_type=sa.String(32))
    to_state: str = Field(sa_type=sa.String(32))
    actor: str = Field(sa_type=ACTOR_TYPE)
    details: str | None = Field(default=None, sa_type=sa.Text)

    @property
    def details_dict(self) -> dict[str, object]:
        return json.loads(self.details) if self.details else {}


class RemoteLogMetadataOutbox(SQLModel, table=True):
    """A transition of a tierflow-copied topic as the ``__remote_log_metadata`` record a broker
    would write, kept until the topic has it (``published_offset``, its offset there)."""

    __tablename__ = "remote_log_metadata_outbox"
    __table_args__ = (
        sa.Index(
            "ix_remote_log_metadata_outbox_published", "metadata_partition", "published_offset"
        ),
    )

    event_id: int = Field(
        primary_key=True, sa_type=EVENT_ID_TYPE, sa_column_kwargs={"autoincrement": False}
    )
    topic_id: str = Field(sa_type=sa.String(64))
    partition: int = Field(sa_type=sa.Integer)
    metadata_partition: int = Field(sa_type=sa.Integer)
    payload: bytes = Field(sa_type=sa.LargeBinary)
    published_offset: int | None = Field(default=None, sa_type=sa.BigInteger)


class RemoteLogMetadataPosition(SQLModel, table=True):
    """How far the outbox has looked at the history, and the mirror has read each partition of
    ``__remote_log_metadata``: a named position."""

    __tablename__ = "remote_log_metadata_positions"

    name: str = Field(primary_key=True, sa_type=sa.String(64))
    position: int = Field(sa_type=sa.BigInteger)


class RemoteSegmentScrub(SQLModel, table=True):
    """When the scrubber last re-read a segment's objects, and what it found wrong, if anything.

    No foreign key: a finding outlives the segment row it was about, as the history does.
    """

    __tablename__ = "remote_segment_scrubs"
    __table_args__ = (sa.Index("ix_remote_segment_scrubs_checked", "checked_ms"),)

    segment_id: str = id_key()
    checked_ms: int = Field(sa_type=sa.BigInteger)
    checked_bytes: int = Field(sa_type=sa.BigInteger)
    finding: str | None = Field(default=None, sa_type=sa.Text)  # None: every check passed
    finding_key: str | None = Field(default=None, sa_type=sa.Text)  # the object at fault


TABLES: tuple[type[SQLModel], ...] = (
    Topic,
    Partition,
    RemoteLogSegment,
    RemoteSegmentObject,
    RemotePartitionDelete,
    MetadataEvent,
    RemoteLogMetadataOutbox,
    RemoteLogMetadataPosition,
    RemoteSegmentScrub,
)
# The migrations here create the diskless coordinator's tables too; their models belong to
# tierflow.diskless.models (a layer above), so the schema knows them by name only.
DISKLESS_TABLE_NAMES = frozenset(
    {"diskless_topics", "diskless_logs", "diskless_wal_objects", "diskless_batches"}
)
TABLE_NAMES: frozenset[str] = (
    frozenset(str(model.__tablename__) for model in TABLES) | DISKLESS_TABLE_NAMES
)
VERSION_TABLE = "tierflow_alembic_version"
