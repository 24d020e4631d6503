"""KIP-950 topic tiering disablement: request, complete (resumably), and enable again.

``request_disable`` is the config change (ENABLED -> DISABLING, tiered epoch bumped);
``complete_disable`` is what the brokers' ``stopPartitions`` does, made resumable: any call
while the topic is DISABLING redoes whatever a killed run left, step by step, and only then
records DISABLED.

* retain: copying has already stopped (copy refuses topics that are not ENABLED). Remote data
  stays readable and still expires by ``retention.*``; local retention falls back to
  ``retention.*`` because ``remote.storage.enable`` is false. NOTE: the remote retention DAG
  plans only ENABLED topics today, so for retained data to expire it must also plan
  DISABLING/DISABLED topics whose policy is retain.
* delete (D4/D6): each partition's log start offset moves to its local log start offset, so
  remote data is unreadable at once; then every remote segment is deleted through
  DELETE_SEGMENT_STARTED/FINISHED and dropped from the index cache.

Both policies hold each partition's copy lease while they work (under one owner name for all
attempts, so a rerun takes over a killed attempt's lease), so a copy that read the topic as
ENABLED just before the request cannot upload under a segment being deleted, and abandoned
COPY_SEGMENT_STARTED rows (which no copy will ever clean up now) are deleted.

Codes like D4 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

from tierflow.faults import crash_point
from tierflow.lifecycle.clock import Clock
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.errors import (
    InvalidConfigError,
    InvalidStateTransition,
    TieredStorageDisablementInProgressError,
)
from tierflow.metadata.log_config import DISABLE_POLICIES, TopicConfig
from tierflow.metadata.models import Partition, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.tiered_disable import begin_tiered_disable
from tierflow.rsm import RemoteStorageManager

log = logging.getLogger(__name__)

Policy = Literal["retain", "delete"]


class IndexCache(Protocol):
    """Kafka's indexCache.removeAll, as both read-path index caches (memory, disk) offer it."""

    def remove_all(self, segment_ids: list[str]) -> None: ...


_ABANDONED = (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED)
_LIVE = (S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED)


class DisablementBusyError(RuntimeError):
    """A copy still holds a partition's lease; the rerun completes the disablement."""


@dataclass(frozen=True)
class DisableRequest:
    topic: str
    topic_id: str
    policy: str
    tiered_epoch: int
    state: TieredState


@dataclass
class DisableReport:
    topic: str
    topic_id: str
    policy: str
    state: TieredState
    finished: bool = False  # this call recorded DISABLING -> DISABLED
    log_start_offsets: dict[int, int] = field(default_factory=dict)  # partitions it moved
    deleted_segments: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def request_disable(
    store: MetadataStore, topic_name: str, *, policy: Policy, actor: str, now_ms: int
) -> DisableRequest:
    """Validate like LogConfig, then ENABLED -> DISABLING in one conditional write."""
    topic = store.topic(topic_name)
    if topic.state is TieredState.DISABLING:
        raise TieredStorageDisablementInProgressError(topic.name)
    validate_disable(topic, policy)
    updated = begin_tiered_disable(store, topic.topic_id, policy=policy, actor=actor, now_ms=now_ms)
    log.info("%s: tiered storage disablement requested (policy=%s)", topic.name, policy)
    return DisableRequest(
        updated.name, updated.topic_id, policy, updated.tiered_epoch, updated.state
    )


def validate_disable(topic: Topic, policy: str) -> None:
    """Reject what Kafka's LogConfig would reject, before anything is written.

    Kafka 3.9 spells retain as ``remote.log.copy.disable=true`` (remote.storage.enable=false
    requires delete.on.disable), and validateRetentionConfigsWhenRemoteCopyDisabled then
    requires local.retention.* in {-2, retention.*}: the local log must keep everything the
    topic's retention promises, since nothing more will reach remote storage.
    """
    if policy not in DISABLE_POLICIES:
        raise InvalidConfigError(
            "remote.log.disable.policy",
            f"remote.log.disable.policy={policy!r} for topic {topic.name}: must be one of "
            f"{', '.join(sorted(DISABLE_POLICIES))}",
        )
    if policy == "retain":
        config: TopicConfig = topic.config.with_changes(
            {"remote_storage_enable": True, "remote_log_copy_disable": True}
        )
        try:
            config.validate()
        except InvalidConfigError as exc:
            raise InvalidConfigError(
                exc.config,
                f"topic {topic.name}: cannot disable tiered storage with policy retain: {exc}; "
                "set local.retention.* to -2 first, or use policy delete",
            ) from None


def complete_disable(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic_name: str,
    *,
    actor: str,
    clock: Clock,
    index_caches: Sequence[IndexCache] = (),
    lease_ttl_s: int = 900,
) -> DisableReport:
    """Finish a DISABLING topic; DISABLED already is a no-op, ENABLED is an error."""
    topic = store.topic(topic_name)
    policy = topic.remote_log_disable_policy
    report = DisableReport(topic.name, topic.topic_id, policy, topic.state)
    if topic.state is TieredState.DISABLED:
        return report
    if topic.state is not TieredState.DISABLING:
        raise InvalidStateTransition("topic", topic.topic_id, topic.state, TieredState.DISABLED)
    owner = disable_lease_owner(topic.topic_id)
    for partition in store.partitions(topic.topic_id):
        with _copy_lease(store, topic, partition.partition, owner, clock, lease_ttl_s):
            if policy == "delete":
                _delete_partition(store, rsm, topic, partition, report, actor, clock)
            else:
                _clean_up_abandoned(store, rsm, topic, partition.partition, report, actor, clock)
    if policy == "delete":
        _drop_cached(index_caches, _all_segment_ids(store, topic))
    crash_point("disable.before_finish")
    report.finished = store.finish_tiered_disable(topic.topic_id, actor=actor, now_ms=clock())
    report.state = TieredState.DISABLED
    log.info("%s: tiered storage disabled (policy=%s)", topic.name, policy)
    return report


def enable(store: MetadataStore, topic_name: str, *, actor: str, now_ms: int) -> Topic:
    """DISABLED -> ENABLED (the store bumps tiered_epoch); the next copy resumes (D3)."""
    topic = store.topic(topic_name)
    if topic.state is TieredState.DISABLING:
        raise TieredStorageDisablementInProgressError(topic.name)
    if topic.state is TieredState.ENABLED:
        return topic
    return store.register_topic(
        topic.name, topic.topic_id, actor=actor, now_ms=now_ms, remote_storage_enable=True
    )


def disable_lease_owner(topic_id: str) -> str:
    """One lease owner for every attempt at a topic's disablement, whoever runs it.

    A killed attempt's lease must not block the rerun (a clear, the next run, the CLI) for
    the lease's whole TTL; a live copy's lease still does, since its owner differs.
    """
    return f"tierflow:disable:{topic_id}"


@contextmanager
def _copy_lease(
    store: MetadataStore, topic: Topic, partition: int, owner: str, clock: Clock, ttl_s: int
) -> Iterator[None]:
    """Hold the partition's copy lease for one step, so no copy runs alongside it."""
    if not store.acquire_lease(
        topic.topic_id, partition, owner, now_ms=clock(), ttl_ms=ttl_s * 1000
    ):
        held = store.partition(topic.topic_id, partition)
        holder = held.lease_owner if held else "?"
        raise DisablementBusyError(
            f"{topic.name}-{partition}: copy lease held by {holder!r}; "
            "rerun once the copy ends or its lease expires"
        )
    try:
        yield
    finally:
        store.release_lease(topic.topic_id, partition, owner)


def _delete_partition(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    partition: Partition,
    report: DisableReport,
    actor: str,
    clock: Clock,
) -> None:
    """D4 then D6: make remote data unreadable, delete it, forget how far copying got."""
    number = partition.partition
    target = partition.local_log_start_offset
    if store.advance_log_start_offset(topic.topic_id, number, target, actor=actor, now_ms=clock()):
        report.log_start_offsets[number] = target
    crash_point("disable.after_log_start")
    for row in store.segments(topic.topic_id, number, states=_LIVE):
        if delete_remote_segment(store, rsm, topic, row, actor=actor, now_ms=clock()):
            report.deleted_segments.append(row.segment_id)
    store.reset_highest_remote_offset(topic.topic_id, number, actor=actor, now_ms=clock())
    crash_point("disable.after_reset")


def _clean_up_abandoned(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    partition: int,
    report: DisableReport,
    actor: str,
    clock: Clock,
) -> None:
    """Retain keeps finished data, but half-done copies and deletes would never be redone."""
    for row in store.segments(topic.topic_id, partition, states=_ABANDONED):
        if delete_remote_segment(
            store, rsm, topic, row, actor=actor, now_ms=clock(), abandoned=True
        ):
            report.deleted_segments.append(row.segment_id)


def _all_segment_ids(store: MetadataStore, topic: Topic) -> list[str]:
    """Every segment id of the topic, tombstones too: a rerun still drops what a kill left."""
    rows: list[RemoteLogSegment] = []
    for partition in store.partitions(topic.topic_id):
        rows += store.segments(topic.topic_id, partition.partition)
    return [row.segment_id for row in rows]


def _drop_cached(caches: Sequence[IndexCache], segment_ids: list[str]) -> None:
    """indexCache.removeAll on every cache the caller reads through (the disk one, and the
    process's shared in-memory one)."""
    for cache in caches:
        cache.remove_all(segment_ids)
