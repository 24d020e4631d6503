"""KIP-950's request to disable tiered storage, which ``register_topic`` cannot express, and
the rules of when a topic may be disabled.

These are functions over the store's public methods: the write itself is
``TopicRegistry.write_topic_config``, one conditional UPDATE plus its event. Resetting a
partition's highest remote offset afterwards is ``PartitionRegistry.reset_highest_remote_offset``.

Codes like D4 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

from tierflow.metadata.errors import (
    InvalidConfigError,
    MetadataError,
    TieredStorageDisablementInProgressError,
)
from tierflow.metadata.models import Topic
from tierflow.metadata.states import TieredState
from tierflow.metadata.store_base import MAX_ATTEMPTS
from tierflow.metadata.topic_registry import TopicRegistry


def begin_tiered_disable(
    store: TopicRegistry, topic_id: str, *, policy: str, actor: str, now_ms: int
) -> Topic:
    """ENABLED -> DISABLING with remote.storage.enable=false and ``policy``; epoch + 1.

    Also DISABLED with retain -> DISABLING with delete: retain is Kafka's read-only state
    (remote.log.copy.disable=true, still remote-enabled), from which turning remote storage
    off with delete.on.disable is allowed (D4, from either enabled state).

    Unlike ``register_topic`` (where repeating false is a silent no-op) a second request
    fails: TIERED_STORAGE_DISABLEMENT_IN_PROGRESS while DISABLING, InvalidConfigError once
    DISABLED otherwise. The UPDATE names the (state, epoch) it read, so of racing requests
    one wins.
    """
    for _ in range(MAX_ATTEMPTS):
        existing = store.topic_by_id(topic_id)
        require_disableable(existing, policy)
        old = existing.config
        new = old.with_changes(
            {"remote_storage_enable": False, "remote_log_disable_policy": policy}
        )
        new.validate()
        written = store.write_topic_config(
            existing,
            new,
            dst=TieredState.DISABLING,
            epoch=existing.tiered_epoch + 1,
            actor=actor,
            now_ms=now_ms,
        )
        if not written:
            continue  # changed under us: re-read and decide again
        return store.topic_by_id(topic_id)
    raise MetadataError(f"topic {topic_id}: gave up after {MAX_ATTEMPTS} concurrent updates")


def require_disableable(topic: Topic, policy: str) -> None:
    """An ENABLED topic, or a read-only (retained) one being deleted, can start disabling;
    say why the others cannot."""
    if topic.state is TieredState.DISABLING:
        raise TieredStorageDisablementInProgressError(topic.name)
    if topic.state is TieredState.DISABLED and retained_to_delete(topic, policy):
        return
    if topic.state is TieredState.DISABLED:
        raise InvalidConfigError(
            "remote.storage.enable",
            f"remote.storage.enable=false: topic {topic.name} is already DISABLED "
            "(tiered storage is not enabled)",
        )


def retained_to_delete(topic: Topic, policy: str) -> bool:
    """A topic disabled with retain still has remote data: deleting it is a new disablement."""
    return (
        topic.state is TieredState.DISABLED
        and topic.remote_log_disable_policy == "retain"
        and policy == "delete"
    )
