"""Topic registration and KIP-950's tiered state (ENABLED, DISABLING, DISABLED)."""

from __future__ import annotations

import dataclasses
from typing import Any

from sqlalchemy import insert, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from tierflow.metadata.errors import (
    InvalidConfigError,
    InvalidStateTransition,
    MetadataError,
    TopicConflictError,
    UnknownTopicError,
)
from tierflow.metadata.events import EventEntity, append_event
from tierflow.metadata.log_config import FIELD_NAMES, TopicConfig
from tierflow.metadata.models import Topic
from tierflow.metadata.states import TieredState, is_valid_tiered_transition
from tierflow.metadata.store_base import MAX_ATTEMPTS, StoreBase


class TopicRegistry(StoreBase):
    def register_topic(
        self, name: str, topic_id: str, *, actor: str, now_ms: int, **configs: Any
    ) -> Topic:
        """Create the topic, or apply ``configs`` (python names) to it; unchanged -> no event.

        Flipping ``remote_storage_enable`` drives KIP-950's tiered state: true enters ENABLED
        (only from DISABLED), false enters DISABLING; either flip bumps ``tiered_epoch``.
        """
        TopicConfig().with_changes(configs)  # unknown names fail before anything is read
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

    def finish_tiered_disable(self, topic_id: str, *, actor: str, now_ms: int) -> bool:
        """DISABLING -> DISABLED once the lifecycle has dealt with the remote data."""
        src, dst = TieredState.DISABLING, TieredState.DISABLED
        with self._write() as connection:
            result = connection.execute(
                update(Topic)
                .where(col(Topic.topic_id) == topic_id, col(Topic.tiered_state) == src.value)
                .values(tiered_state=dst.value, updated_ms=now_ms)
            )
            if result.rowcount == 1:
                append_event(
                    connection,
                    entity=EventEntity.TOPIC,
                    topic_id=topic_id,
                    from_state=src,
                    to_state=dst,
                    actor=actor,
                    now_ms=now_ms,
                )
                return True
        current = self.topic_by_id(topic_id).state
        if current is dst:
            return False
        raise InvalidStateTransition("topic", topic_id, current, dst)

    def topic(self, name: str) -> Topic:
        found = self._find_topic(name)
        if found is None:
            raise UnknownTopicError(f"unknown topic {name!r}")
        return found

    def topics(self) -> list[Topic]:
        with self._session() as session:
            return list(session.exec(select(Topic).order_by(col(Topic.name))).all())

    def _find_topic(self, name: str) -> Topic | None:
        with self._session() as session:
            return session.exec(select(Topic).where(col(Topic.name) == name)).first()

    def _insert_topic(
        self, name: str, topic_id: str, configs: dict[str, Any], *, actor: str, now_ms: int
    ) -> Topic | None:
        """Insert a new topic; None if another process registered the name first."""
        with self._session() as session:
            clash = session.get(Topic, topic_id)
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
                append_event(
                    connection,
                    entity=EventEntity.TOPIC,
                    topic_id=topic_id,
                    to_state=state,
                    actor=actor,
                    now_ms=now_ms,
                    details={"name": name, "configs": config.as_kafka_configs()},
                )
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
        changed = {
            FIELD_NAMES[field]: [getattr(old, field), getattr(new, field)]
            for field in FIELD_NAMES
            if getattr(old, field) != getattr(new, field)
        }
        with self._write() as connection:
            result = connection.execute(
                update(Topic)
                .where(
                    col(Topic.topic_id) == existing.topic_id,
                    col(Topic.tiered_state) == src.value,
                    col(Topic.tiered_epoch) == existing.tiered_epoch,
                )
                .values(
                    tiered_state=dst.value,
                    tiered_epoch=epoch,
                    updated_ms=now_ms,
                    **dataclasses.asdict(new),
                )
            )
            if result.rowcount != 1:
                return False
            append_event(
                connection,
                entity=EventEntity.TOPIC,
                topic_id=existing.topic_id,
                from_state=src,
                to_state=dst,
                actor=actor,
                now_ms=now_ms,
                details={"changed": changed, "tiered_epoch": epoch},
            )
        return True
