"""Task bodies of the diskless_gc DAG: retention over the WAL, then the garbage collector.

Retention also carries the tiered log start offset (moved by remote retention when it deletes
merged segments) over to the diskless log, which answers fetches below the WAL start.

Retention first, so that objects it empties are marked (with their grace period) in the same
run; the collector then deletes every object whose deadline has passed (emptied by retention
or by the merge more than ``TIERFLOW_DISKLESS_DELETE_GRACE_MS`` ago) and every object whose
commit never came within ``TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS``. Both are safe to rerun:
retention cuts at batch boundaries it recomputes, and a delete of a missing key succeeds.
"""

from __future__ import annotations

import logging

from tierflow.config import Settings, reads_settings
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.gc import collect_garbage as collect
from tierflow.diskless.retention import enforce_retention, follow_tiered_log_start
from tierflow.runtime import open_objects, open_store

log = logging.getLogger(__name__)


@reads_settings
def apply_retention(*, now_ms: int, settings: Settings | None = None) -> dict:
    store = open_store(settings)
    coordinator = DisklessCoordinator.for_store(store)
    grace = settings.diskless.delete_grace_ms
    deletions = enforce_retention(coordinator, now_ms=now_ms, delete_grace_ms=grace)
    # Remote retention may have deleted merged segments: the WAL's log start follows.
    for moved in follow_tiered_log_start(coordinator, store, now_ms=now_ms, delete_grace_ms=grace):
        log.info(
            "%s-%d: log start offset %d, as tiered storage's",
            store.topic_by_id(moved.topic_id).name,
            moved.partition,
            moved.log_start_offset,
        )
    for d in deletions:
        log.info(
            "%s-%d: %d batches (%d bytes) past retention deleted; log start offset %d",
            store.topic_by_id(d.topic_id).name,
            d.partition,
            d.batches_deleted,
            d.bytes_deleted,
            d.log_start_offset,
        )
    return {
        "partitions": len(deletions),
        "batches": sum(d.batches_deleted for d in deletions),
        "bytes": sum(d.bytes_deleted for d in deletions),
        "objects_emptied": sum(len(d.objects_marked) for d in deletions),
    }


@reads_settings
def collect_garbage(*, now_ms: int, settings: Settings | None = None) -> dict:
    coordinator = DisklessCoordinator.for_store(open_store(settings))
    report = collect(
        coordinator,
        open_objects(settings),
        now_ms=now_ms,
        uncommitted_grace_ms=settings.diskless.uncommitted_grace_ms,
    )
    log.info(
        "deleted %d WAL objects (%d bytes), %d of them never committed",
        len(report.deleted),
        report.bytes_deleted,
        len(report.abandoned),
    )
    return report.as_dict()
