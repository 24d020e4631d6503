"""Task bodies of the topic_disablement DAG: one operator request, carried to its end.

The request step decides what a run does and is safe to repeat:

* ``disable`` on an ENABLED topic writes the request (ENABLED -> DISABLING, epoch + 1); so
  does ``disable`` with delete on a topic disabled with retain (its remote data still exists).
* ``disable`` on a DISABLING topic with the **same policy** and no live attempt resumes the
  interrupted disablement instead of failing: an on-call who triggers the run again after a
  crash wants the job finished. A different policy, or another attempt still holding a
  partition's lease, is Kafka's TIERED_STORAGE_DISABLEMENT_IN_PROGRESS and changes nothing.
* ``disable`` on a topic already DISABLED with the same policy is a no-op; ``enable`` on an
  ENABLED topic too.

The completion step (``complete_disable``) is idempotent, so a clear of a failed task, an
Airflow retry, or the next run all end in DISABLED.
"""

from __future__ import annotations

import logging
from typing import Literal

from tierflow.config import Settings, reads_settings
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.disablement import (
    complete_disable,
    disable_lease_owner,
    enable,
    request_disable,
)
from tierflow.metadata.errors import InvalidConfigError, TieredStorageDisablementInProgressError
from tierflow.metadata.log_config import DISABLE_POLICIES
from tierflow.metadata.models import Topic
from tierflow.metadata.states import TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.tiered_disable import retained_to_delete
from tierflow.read.index_cache import open_index_cache
from tierflow.read.index_cache.memory import DEFAULT_INDEX_CACHE
from tierflow.runtime import open_storage, open_store

log = logging.getLogger(__name__)

Action = Literal["disable", "enable"]
ACTIONS = ("disable", "enable")


@reads_settings
def apply_request(
    topic_name: str,
    action: str,
    policy: str,
    *,
    actor: str,
    settings: Settings | None = None,
) -> dict:
    """Record the request (or recognise it as already recorded); returns what to do next."""
    store = open_store(settings)
    if action not in ACTIONS:
        raise InvalidConfigError("action", f"action={action!r}: must be one of disable, enable")
    topic = store.topic(topic_name)
    now_ms = wall_clock_ms()
    if action == "enable":
        was = topic.state
        enabled = enable(store, topic.name, actor=actor, now_ms=now_ms)
        log.info(
            "%s: %s -> %s (tiered epoch %d)", topic.name, was, enabled.state, enabled.tiered_epoch
        )
        return _outcome(enabled, action, "enabled" if was is not TieredState.ENABLED else "no-op")
    if policy not in DISABLE_POLICIES:
        raise InvalidConfigError(
            "remote.log.disable.policy",
            f"remote.log.disable.policy={policy!r} for topic {topic.name}: must be one of "
            f"{', '.join(sorted(DISABLE_POLICIES))}",
        )
    return _disable(store, topic, policy, actor=actor, now_ms=now_ms)


def _disable(
    store: MetadataStore, topic: Topic, policy: str, *, actor: str, now_ms: int, raced: bool = False
) -> dict:
    """A disable request on ``topic`` as read; where another request moved the topic between
    that read and this one's conditional update, it is answered as if it came second."""
    action = "disable"
    if topic.state is TieredState.ENABLED or retained_to_delete(topic, policy):
        try:
            request_disable(store, topic.name, policy=policy, actor=actor, now_ms=now_ms)  # type: ignore[arg-type]
        except (InvalidConfigError, TieredStorageDisablementInProgressError):
            if raced:
                raise
            now = store.topic(topic.name)
            return _disable(store, now, policy, actor=actor, now_ms=now_ms, raced=True)
        return _outcome(store.topic(topic.name), action, "requested")
    if topic.remote_log_disable_policy != policy:
        if topic.state is TieredState.DISABLING:
            raise TieredStorageDisablementInProgressError(topic.name)
        raise InvalidConfigError(
            "remote.log.disable.policy",
            f"topic {topic.name} is already DISABLED with policy "
            f"{topic.remote_log_disable_policy}; enable it first to disable with {policy}",
        )
    if topic.state is TieredState.DISABLED:
        log.info("%s: already DISABLED with policy %s: nothing to do", topic.name, policy)
        return _outcome(topic, action, "no-op")
    holders = live_lease_holders(store, topic, now_ms=now_ms)
    if holders:
        log.error("%s: still being worked on by %s", topic.name, ", ".join(holders))
        raise TieredStorageDisablementInProgressError(topic.name)
    log.warning(
        "%s: found DISABLING (policy %s) with no live attempt: resuming the interrupted "
        "disablement",
        topic.name,
        policy,
    )
    return _outcome(topic, action, "resumed")


@reads_settings
def complete_request(topic_name: str, *, actor: str, settings: Settings | None = None) -> dict:
    """Carry a DISABLING topic to DISABLED (no-op when already DISABLED)."""
    store = open_store(settings)
    report = complete_disable(
        store,
        open_storage(settings),
        topic_name,
        actor=actor,
        clock=wall_clock_ms,
        index_caches=(open_index_cache(settings), DEFAULT_INDEX_CACHE),
        lease_ttl_s=settings.copy_lease_ttl_s,
    )
    log.info(
        "%s: %s (policy %s); log start offsets moved %s; %d remote segment(s) deleted",
        report.topic,
        report.state,
        report.policy,
        report.log_start_offsets or "nowhere",
        len(report.deleted_segments),
    )
    result = report.as_dict()
    result["state"] = str(report.state)
    return result


def live_lease_holders(store: MetadataStore, topic: Topic, *, now_ms: int) -> list[str]:
    """Owners of unexpired copy leases on the topic's partitions: copies still running.

    A disablement attempt's own lease does not count: the rerun takes it over.
    """
    ours = disable_lease_owner(topic.topic_id)
    return sorted(
        {
            f"{p.lease_owner} (partition {p.partition})"
            for p in store.partitions(topic.topic_id)
            if p.lease_owner not in (None, ours) and (p.lease_expires_ms or 0) > now_ms
        }
    )


def _outcome(topic: Topic, action: str, what: str) -> dict:
    return {
        "topic": topic.name,
        "action": action,
        "outcome": what,
        "state": str(topic.state),
        "policy": topic.remote_log_disable_policy,
        "tiered_epoch": topic.tiered_epoch,
    }
