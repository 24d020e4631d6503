"""KIP-950 disablement writes that ``register_topic`` cannot express atomically.

Kept apart from TopicRegistry so the store's mixins stay untouched: these are functions over
any store (they use its write transactions), each one conditional UPDATE plus its event.

Codes like D3 and D4 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

from sqlalchemy import exists
from sqlmodel import col

from tierflow.metadata.errors import (
    InvalidConfigError,
    MetadataError,
    TieredStorageDisablementInProgressError,
)
from tierflow.metadata.events import Event, EventEntity, Subject
from tierflow.metadata.models import Partition, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState, TieredState
from tierflow.metadata.store_base import MAX_ATTEMPTS, StoreBase, partition_key, update_and_record
from tierflow.metadata.topic_registry import write_topic_config

HIGHEST_REMOTE_OFFSET_RESET = "HIGHEST_REMOTE_OFFSET_RESET"


def begin_tiered_disable(
    store: StoreBase, topic_id: str, *, policy: str, actor: str, now_ms: int
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
        written = write_topic_config(
            store,
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


def reset_highest_remote_offset(
    store: StoreBase, topic_id: str, partition: int, *, actor: str, now_ms: int
) -> bool:
    """Forget how far copying got, after a disable-with-delete removed every segment.

    A re-enabled topic must then copy again from the log start (D3), and local retention must
    not take the old range as uploaded. Done only while the topic is DISABLING and no segment
    of the partition is live, checked in the same UPDATE; True if this call reset it.
    """
    existing = store._require_partition(topic_id, partition)
    if existing.highest_remote_offset < 0:
        return False
    live = exists().where(
        *partition_key(RemoteLogSegment, topic_id, partition),
        col(RemoteLogSegment.state) != RemoteLogSegmentState.DELETE_SEGMENT_FINISHED.value,
    )
    disabling = exists().where(
        col(Topic.topic_id) == topic_id,
        col(Topic.tiered_state) == TieredState.DISABLING.value,
    )
    read = (
        *partition_key(Partition, topic_id, partition),
        col(Partition.highest_remote_offset) == existing.highest_remote_offset,
        disabling,
        ~live,
    )
    subject = Subject(EventEntity.PARTITION, topic_id, partition)
    details = {"highest_remote_offset": [existing.highest_remote_offset, -1]}
    event = Event(subject, HIGHEST_REMOTE_OFFSET_RESET, actor, now_ms, details=details)
    with store._write() as connection:
        return update_and_record(connection, Partition, read, {"highest_remote_offset": -1}, event)
