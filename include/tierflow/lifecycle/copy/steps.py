"""Segment copy for one partition: Kafka's RLMCopyTask, made resumable and split in three.

1. ``prepare_copy`` (Airflow; prepare.py): take the partition's lease, delete what interrupted
   attempts left, choose the eligible segments (below the last stable offset, as Kafka does),
   plan each one (indexes, snapshot, epochs) and record it as COPY_SEGMENT_STARTED under a
   fresh segment id.
2. ``rewrite_segment`` (Spark or the worker; rewrite.py): check every batch (framing, CRC,
   offsets) in the same read that transforms and uploads it; no state.
3. ``finalize_copy`` (Airflow; finalize.py): verify every uploaded object (size, sha256,
   manifest), record COPY_SEGMENT_FINISHED in ascending offset order, which also advances the
   highest remote offset in the same transaction, and release the lease.

``copy_partition`` below runs the three in this process, one partition at a time.

Where Kafka leaks, tierflow cleans up. A copy killed between STARTED and FINISHED leaves a
COPY_SEGMENT_STARTED row and maybe some objects; Kafka re-uploads under a new id and leaves the
orphan to retention. Here the lease guarantees no other attempt is alive, so every
COPY_SEGMENT_STARTED (and DELETE_SEGMENT_STARTED) row found by ``prepare_copy`` is deleted
through the regular transitions before copying resumes. A rerun from any point ends in the
state of an uninterrupted run: one FINISHED segment per eligible local segment, no stray
objects.

A rerun under the same owner takes the lease over at once, even from an attempt that is still
alive (two runs of the DAG at once: a backfill, or dag.test, beside the scheduled run). So every
write of an attempt is fenced by its taking of the lease (metadata.partition_registry.Lease):
once taken over, the old attempt can neither start, finish nor delete a segment, and it fails
saying so, while the new one copies those offsets once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypedDict, Unpack

from tierflow.config import default
from tierflow.faults import crash_point
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.plan import CopiedSegment, PartitionCopyReport
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import rewrite_segment
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager


class CopyOptions(TypedDict, total=False):
    """prepare_copy's options, as copy_partition passes them on (``lease_ttl_s`` in the
    owner's CopyOwner)."""

    lease_ttl_s: int
    clock: Clock
    dry_run: bool


def copy_partition(
    log_: PartitionLog,
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    owner: str,
    on_copied: Callable[[CopiedSegment], None] | None = None,
    progress: Progress = NO_PROGRESS,
    **options: Unpack[CopyOptions],
) -> PartitionCopyReport:
    """Prepare, rewrite in this process, finalize: the whole copy of one partition.

    ``progress`` hears of the segments and bytes planned (``add_total``: no dry run is needed
    to size a bar, and one sized from a dry run's ``pending_bytes`` would count them twice)
    and of each upload as it ends, which is when the time goes; ``on_copied`` follows once
    each is FINISHED. A dry run reports nothing to ``progress``: it does no work.
    """
    lease_ttl_s = options.pop("lease_ttl_s", default("copy_lease_ttl_s"))
    plan = prepare_copy(log_, store, rsm=rsm, owner=CopyOwner(owner, lease_ttl_s), **options)
    if options.get("dry_run", False) or plan.report.skipped:
        return plan.report
    progress.add_total(len(plan.jobs), plan.total_bytes)
    results = {}
    for job in plan.jobs:
        progress.note(f"{job.topic}-{job.partition} {Path(job.log_segment).name}")
        results[job.segment_id] = rewrite_segment(job, rsm)
        progress.advance(1, job.size_in_bytes)
        crash_point("copy.after_upload")
    clock = options.get("clock", wall_clock_ms)
    return finalize_copy(plan, results, store, rsm, owner=owner, clock=clock, on_copied=on_copied)
