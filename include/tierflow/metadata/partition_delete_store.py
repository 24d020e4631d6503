"""The RemotePartitionDeleteState machine: a durable, retryable partition-removal job.

Kafka's broker never emits these states (its partition delete is synchronous and never
retried); tierflow uses them so an interrupted removal is finished by the next run.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from tierflow.metadata.errors import InvalidStateTransition, MetadataError
from tierflow.metadata.events import Event, EventEntity, Subject, append_event
from tierflow.metadata.models import RemotePartitionDelete
from tierflow.metadata.states import PARTITION_DELETE_SOURCES, RemotePartitionDeleteState
from tierflow.metadata.store_base import (
    MAX_ATTEMPTS,
    StoreBase,
    partition_key,
    update_and_record,
    update_one,
)


class PartitionDeleteStore(StoreBase):
    def mark_partition_delete(
        self, topic_id: str, partition: int, *, actor: str, now_ms: int
    ) -> bool:
        """null -> DELETE_PARTITION_MARKED. A repeated mark counts in ``marks`` (no event) and
        returns False; marking a delete already STARTED or FINISHED is invalid."""
        marked = RemotePartitionDeleteState.DELETE_PARTITION_MARKED
        self._require_partition(topic_id, partition)
        key = partition_key(RemotePartitionDelete, topic_id, partition)
        for _ in range(MAX_ATTEMPTS):
            try:
                with self._write() as connection:
                    if update_one(
                        connection,
                        RemotePartitionDelete,
                        (*key, col(RemotePartitionDelete.state) == marked.value),
                        {"marks": col(RemotePartitionDelete.marks) + 1},
                    ):
                        return False
                    current = connection.execute(
                        select(RemotePartitionDelete.state).where(*key)
                    ).scalar()
                    if current is not None:
                        raise InvalidStateTransition(
                            "partition_delete", f"{topic_id}-{partition}", current, marked
                        )
                    connection.execute(
                        insert(RemotePartitionDelete).values(
                            topic_id=topic_id,
                            partition=partition,
                            state=marked.value,
                            event_timestamp_ms=now_ms,
                            marks=1,
                        )
                    )
                    subject = Subject(EventEntity.PARTITION_DELETE, topic_id, partition)
                    append_event(connection, Event(subject, marked, actor, now_ms))
                    return True
            except IntegrityError:
                continue  # marked concurrently (PostgreSQL); the next pass counts our mark
        raise MetadataError(f"partition {topic_id}-{partition}: gave up marking for delete")

    def transition_partition_delete(
        self,
        topic_id: str,
        partition: int,
        dst: RemotePartitionDeleteState,
        *,
        actor: str,
        now_ms: int,
    ) -> bool:
        dst = RemotePartitionDeleteState(dst)
        if dst is RemotePartitionDeleteState.DELETE_PARTITION_MARKED:
            return self.mark_partition_delete(topic_id, partition, actor=actor, now_ms=now_ms)
        entity_id = f"{topic_id}-{partition}"
        subject = Subject(EventEntity.PARTITION_DELETE, topic_id, partition)
        for _ in range(MAX_ATTEMPTS):
            current = self.partition_delete(topic_id, partition)
            src = None if current is None else current.delete_state
            if src is dst:
                return False
            if src is None or src not in PARTITION_DELETE_SOURCES[dst]:
                raise InvalidStateTransition("partition_delete", entity_id, src, dst)
            read = (
                *partition_key(RemotePartitionDelete, topic_id, partition),
                col(RemotePartitionDelete.state) == src.value,
            )
            values = {"state": dst.value, "event_timestamp_ms": now_ms}
            event = Event(subject, dst, actor, now_ms, from_state=src)
            with self._write() as connection:
                if update_and_record(connection, RemotePartitionDelete, read, values, event):
                    return True
        raise MetadataError(f"partition delete {entity_id}: gave up after {MAX_ATTEMPTS} races")

    def partition_delete(self, topic_id: str, partition: int) -> RemotePartitionDelete | None:
        return self._get(RemotePartitionDelete, (topic_id, partition))

    def partition_deletes(
        self, *, states: Iterable[RemotePartitionDeleteState] | None = None
    ) -> list[RemotePartitionDelete]:
        query = select(RemotePartitionDelete)
        if states is not None:
            names = [RemotePartitionDeleteState(state).value for state in states]
            query = query.where(col(RemotePartitionDelete.state).in_(names))
        order = (col(RemotePartitionDelete.topic_id), col(RemotePartitionDelete.partition))
        return self._all(query.order_by(*order))
