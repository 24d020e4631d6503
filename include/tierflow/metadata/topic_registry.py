"""Topic registration and KIP-950's tiered state (ENABLED, DISABLING, DISABLED)."""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from tierflow.metadata.errors import (
    InvalidConfigError,
    InvalidStateTransition,
    MetadataError,
    TopicConflictError,
    UnknownTopicError,
)
from tierflow.metadata.events import Event, EventEntity, Subject, append_event
from tierflow.metadata.log_config import FIELD_NAMES, TopicConfig
from tierflow.metadata.models import Partition, RemotePartitionDelete, Topic
from tierflow.metadata.states import TieredState, is_valid_tiered_transition
from tierflow.metadata.store_base import (
    MAX_ATTEMPTS,
    StoreBase,
    found_or_raise,
    update_and_record,
)
from tierflow.metadata.tierable import refuse_internal_topic
from tierflow.storage.keys import validate_topic_id, validate_topic_name

# '#' is not a legal Kafka topic character, so a retired name never clashes with a live one
# and the Kafka name (still needed for the retired topic's object keys) is what precedes it.
RETIRED_MARK = "#deleted-"


def retired_topic_name(name: str, topic_id: str) -> str:
    return f"{name}{RETIRED_MARK}{topic_id}"


def kafka_topic_name(stored_name: str) -> str:
    """The Kafka name of a topic row, whether live or retired."""
    return stored_name.split(RETIRED_MARK, 1)[0]


class TopicRegistry(StoreBase):
    def register_topic(
        self, name: str, topic_id: str, *, actor: str, now_ms: int, **configs: Any
    ) -> Topic:
        """Create the topic, or apply ``configs`` (python names) to it; unchanged -> no event.

        Flipping ``remote_storage_enable`` drives KIP-950's tiered state: true enters ENABLED
        (only from DISABLED), false enters DISABLING; either flip bumps ``tiered_epoch``.
        An illegal name or id (InvalidTopicNameError, InvalidTopicIdError), a topic Kafka never
        tiers (NotTierableTopicError) or a bad config (InvalidConfigError) raises before
        anything is written.
        """
        # The name and id become part of every object key: check them, and the config names,
        # before anything is read or written.
        validate_topic_name(name)
        refuse_internal_topic(name)
        validate_topic_id(name, topic_id)
        TopicConfig().with_changes(configs)
        for _ in range(MAX_ATTEMPTS):
            existing = self._find_topic(name)
            if existing is None:
                created = self._insert_topic(name, topic_id, configs, actor=actor, now_ms=now_ms)
                if created is not None:
                    return created
                continue
            if existing.topic_id != topic_id:
                raise TopicConflictError(
                    f"topic {name} is registered with id {existing.topic_id}, not {topic_id}"
                )
            if self._update_topic(existing, configs, actor=actor, now_ms=now_ms):
                return self.topic(name)
        raise MetadataError(f"topic {name}: gave up after {MAX_ATTEMPTS} concurrent updates")

    def write_topic_config(
        self,
        existing: Topic,
        new: TopicConfig,
        *,
        dst: TieredState,
        epoch: int,
        actor: str,
        now_ms: int,
    ) -> bool:
        """One conditional UPDATE of a topic's configs and tiered state, plus its event.

        The UPDATE names the (state, epoch) that was read, so of racing writers one wins; False
        means the row changed under us and the caller re-reads. Public for the KIP-950 writes
        that ``register_topic`` cannot express (tiered_disable).
        """
        old, src = existing.config, existing.state
        changed = {
            FIELD_NAMES[field]: [getattr(old, field), getattr(new, field)]
            for field in FIELD_NAMES
            if getattr(old, field) != getattr(new, field)
        }
        read = (
            col(Topic.topic_id) == existing.topic_id,
            col(Topic.tiered_state) == src.value,
            col(Topic.tiered_epoch) == existing.tiered_epoch,
        )
        values = {
            "tiered_state": dst.value,
            "tiered_epoch": epoch,
            "updated_ms": now_ms,
            **dataclasses.asdict(new),
        }
        details = {"changed": changed, "tiered_epoch": epoch}
        subject = Subject(EventEntity.TOPIC, existing.topic_id)
        event = Event(subject, dst, actor, now_ms, from_state=src, details=details)
        with self._write() as connection:
            return update_and_record(connection, Topic, read, values, event)

    def finish_tiered_disable(self, topic_id: str, *, actor: str, now_ms: int) -> bool:
        """DISABLING -> DISABLED once the lifecycle has dealt with the remote data."""
        src, dst = TieredState.DISABLING, TieredState.DISABLED
        read = (col(Topic.topic_id) == topic_id, col(Topic.tiered_state) == src.value)
        values = {"tiered_state": dst.value, "updated_ms": now_ms}
        event = Event(Subject(EventEntity.TOPIC, topic_id), dst, actor, now_ms, from_state=src)
        with self._write() as connection:
            if update_and_record(connection, Topic, read, values, event):
                return True
        current = self.topic_by_id(topic_id).state
        if current is dst:
            return False
        raise InvalidStateTransition("topic", topic_id, current, dst)

    def retire_topic_name(self, topic_id: str, *, actor: str, now_ms: int) -> bool:
        """Free a deleted topic's name so Kafka can recreate it under a new id.

        The row stays (its partitions are still being removed), renamed to a tombstone name
        that ``kafka_topic_name`` maps back. Only a topic whose every partition is marked for
        delete can be retired; retiring twice is a no-op (False).
        """
        topic = self.topic_by_id(topic_id)
        if RETIRED_MARK in topic.name:
            return False
        unmarked = self._partitions_not_marked(topic_id)
        if unmarked:
            raise MetadataError(
                f"topic {topic.name} ({topic_id}): partitions {unmarked} are not marked for "
                "delete; only a deleted topic's name can be retired"
            )
        retired = retired_topic_name(topic.name, topic_id)
        read = (col(Topic.topic_id) == topic_id, col(Topic.name) == topic.name)
        values = {"name": retired, "updated_ms": now_ms}
        details = {"retired_name": topic.name, "name": retired}
        subject = Subject(EventEntity.TOPIC, topic_id)  # a rename: the state stays
        event = Event(subject, topic.state, actor, now_ms, from_state=topic.state, details=details)
        with self._write() as connection:  # False: retired concurrently
            return update_and_record(connection, Topic, read, values, event)

    def _partitions_not_marked(self, topic_id: str) -> list[int]:
        marked = select(RemotePartitionDelete.partition).where(
            col(RemotePartitionDelete.topic_id) == topic_id
        )
        query = (
            select(Partition.partition)
            .where(col(Partition.topic_id) == topic_id)
            .where(col(Partition.partition).not_in(marked))
            .order_by(col(Partition.partition))
        )
        return self._all(query)

    def topic(self, name: str) -> Topic:
        return found_or_raise(
            self._find_topic(name), lambda: UnknownTopicError(f"unknown topic {name!r}")
        )

    def topics(self) -> list[Topic]:
        return self._all(select(Topic).order_by(col(Topic.name)))

    def _find_topic(self, name: str) -> Topic | None:
        return self._first(select(Topic).where(col(Topic.name) == name))

    def _insert_topic(
        self, name: str, topic_id: str, configs: dict[str, Any], *, actor: str, now_ms: int
    ) -> Topic | None:
        """Insert a new topic; None if another process registered the name first."""
        clash = self._get(Topic, topic_id)
        if clash is not None:
            raise TopicConflictError(f"topic id {topic_id} already belongs to topic {clash.name}")
        config = TopicConfig().with_changes(configs)
        config.validate()
        state = TieredState.ENABLED if config.remote_storage_enable else TieredState.DISABLED
        try:
            with self._write() as connection:
                connection.execute(
                    insert(Topic).values(
                        topic_id=topic_id,
                        name=name,
                        tiered_state=state.value,
                        tiered_epoch=0,
                        updated_ms=now_ms,
                        **dataclasses.asdict(config),
                    )
                )
                details = {"name": name, "configs": config.as_kafka_configs()}
                subject = Subject(EventEntity.TOPIC, topic_id)
                append_event(connection, Event(subject, state, actor, now_ms, details=details))
        except IntegrityError:
            return None
        return self.topic(name)

    def _update_topic(
        self, existing: Topic, configs: dict[str, Any], *, actor: str, now_ms: int
    ) -> bool:
        """Apply config changes; False if the row changed under us (caller retries)."""
        old = existing.config
        new = old.with_changes(configs)
        new.validate()
        if new == old:
            return True
        src = existing.state
        dst, epoch = src, existing.tiered_epoch
        if new.remote_storage_enable != old.remote_storage_enable:
            dst = TieredState.ENABLED if new.remote_storage_enable else TieredState.DISABLING
            if not is_valid_tiered_transition(src, dst):
                raise InvalidConfigError(
                    "remote.storage.enable",
                    f"remote.storage.enable={str(new.remote_storage_enable).lower()}: topic "
                    f"{existing.name} is {src}; it can be enabled again once DISABLED",
                )
            epoch += 1
        return self.write_topic_config(
            existing, new, dst=dst, epoch=epoch, actor=actor, now_ms=now_ms
        )
