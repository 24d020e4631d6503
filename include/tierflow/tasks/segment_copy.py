"""Task bodies of the segment_copy DAG."""

from __future__ import annotations

import logging

from tierflow.config import Settings
from tierflow.lifecycle.copy import copy_partition
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.states import TieredState
from tierflow.runtime import find_partition_log, open_storage, open_store, partition_logs

log = logging.getLogger(__name__)


def list_copy_targets(settings: Settings | None = None) -> list[dict]:
    """Partitions on disk whose topic is registered with tiering on; one mapped task each."""
    settings = settings or Settings.from_env()
    store = open_store(settings)
    targets = []
    for log_ in partition_logs(settings.log_dirs):
        try:
            topic = store.topic(log_.topic)
        except UnknownTopicError:
            log.info("skipping %s-%d: topic not registered", log_.topic, log_.partition)
            continue
        if topic.remote_storage_enable and topic.tiered_state == TieredState.ENABLED:
            targets.append({"topic": log_.topic, "partition": log_.partition})
    log.info("%d partitions to copy", len(targets))
    return targets


def copy_target(
    target: dict, *, owner: str, lease_ttl_s: int | None = None, settings: Settings | None = None
) -> dict:
    """Copy one partition; the owner names the task so that a cleared rerun can resume."""
    settings = settings or Settings.from_env()
    log_ = find_partition_log(settings.log_dirs, target["topic"], int(target["partition"]))
    report = copy_partition(
        log_,
        open_store(settings),
        open_storage(settings),
        owner=owner,
        lease_ttl_s=lease_ttl_s or settings.copy_lease_ttl_s,
    )
    if report.skipped:
        log.info("%s-%d skipped: %s", report.topic, report.partition, report.skipped)
    return report.as_dict()


def summarize(reports: list[dict]) -> dict:
    copied = sum(len(r["copied"]) for r in reports)
    size = sum(s["size_in_bytes"] for r in reports for s in r["copied"])
    cleaned = sum(len(r["cleaned_up"]) for r in reports)
    log.info(
        "copied %d segments (%d bytes) over %d partitions; removed %d abandoned attempts",
        copied,
        size,
        len(reports),
        cleaned,
    )
    return {"partitions": len(reports), "segments": copied, "bytes": size, "cleaned_up": cleaned}
