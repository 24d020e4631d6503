"""The metadata store: Kafka's remote-log metadata, durable and shared by many processes.

It plays the part of Kafka's RemoteLogMetadataManager; ``metadata_events`` stands in for the
``__remote_log_metadata`` topic. ``MetadataStore`` is the one entry point: its docstring says
which module holds each group of methods.
"""

from __future__ import annotations

from sqlalchemy import Engine
from sqlmodel import col, select

from tierflow.metadata.engine import create_store_engine
from tierflow.metadata.events import Event, EventEntity, Subject, append_event
from tierflow.metadata.models import MetadataEvent
from tierflow.metadata.partition_delete_store import PartitionDeleteStore
from tierflow.metadata.partition_registry import PartitionRegistry
from tierflow.metadata.remote_log_metadata_store import RemoteLogMetadataStore
from tierflow.metadata.schema_version import at_head
from tierflow.metadata.scrub_store import ScrubStore
from tierflow.metadata.segment_store import SegmentStore
from tierflow.metadata.segment_writes import (
    CompactedSegment,
    SegmentObject,
    SegmentTransition,
    StartedSegment,
)
from tierflow.metadata.store_base import wall_clock_ms
from tierflow.metadata.topic_registry import TopicRegistry

__all__ = [
    "CompactedSegment",
    "MetadataStore",
    "SegmentObject",
    "SegmentTransition",
    "StartedSegment",
    "wall_clock_ms",
]


class MetadataStore(
    TopicRegistry,
    PartitionRegistry,
    SegmentStore,
    PartitionDeleteStore,
    RemoteLogMetadataStore,
    ScrubStore,
):
    """Every read and write of the metadata, each group of methods in its own module:

    - topics, KIP-950's tiered state, ``write_topic_config``: ``topic_registry.TopicRegistry``
      (the disable request over it: ``tiered_disable``)
    - partitions, start offsets, the copy lease, ``reset_highest_remote_offset``:
      ``partition_registry.PartitionRegistry``
    - segments (``add_segment``, ``start_segments``, ``transition_segment``,
      ``finish_compacted_segment``, the queries): ``segment_store.SegmentStore``; the values
      those writes take (StartedSegment, SegmentTransition, CompactedSegment): ``segment_writes``
    - partition deletes: ``partition_delete_store.PartitionDeleteStore``
    - the ``__remote_log_metadata`` outbox and the copier: ``remote_log_metadata_store``
    - the scrubber's queue and verdicts: ``scrub_store.ScrubStore``
    - the history (``events``, ``record_restore``) and the engine: here; sessions and write
      transactions: ``store_base``
    """

    def __init__(self, url: str, *, migrate: bool = True) -> None:
        self.url = url
        self.engine: Engine = create_store_engine(url)
        if migrate and not at_head(self.engine):
            from tierflow.metadata import migrate as migrations  # Alembic: only when needed

            migrations.upgrade(self.engine)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def record_restore(
        self, topic_id: str, partition: int, *, actor: str, now_ms: int, details: dict
    ) -> None:
        """One event for a partition restored from remote storage (what, where, who)."""
        subject = Subject(EventEntity.RESTORE, topic_id, partition)
        with self._write() as connection:
            append_event(connection, Event(subject, "RESTORED", actor, now_ms, details=details))

    def events(
        self,
        *,
        topic_id: str | None = None,
        partition: int | None = None,
        segment_id: str | None = None,
        entity: str | None = None,
    ) -> list[MetadataEvent]:
        """The history in the order it was written (ascending id)."""
        query = select(MetadataEvent)
        if topic_id is not None:
            query = query.where(col(MetadataEvent.topic_id) == topic_id)
        if partition is not None:
            query = query.where(col(MetadataEvent.partition) == partition)
        if segment_id is not None:
            query = query.where(col(MetadataEvent.segment_id) == segment_id)
        if entity is not None:
            query = query.where(col(MetadataEvent.entity) == EventEntity(entity).value)
        with self._session() as session:
            return list(session.exec(query.order_by(col(MetadataEvent.id))).all())
