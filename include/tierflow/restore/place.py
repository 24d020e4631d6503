"""The end of a restore: each partition whose segments are all written moved into place and
recorded once; each other one's staging directory removed, its target as it was.

A partition is placed only when every segment of it was written into its staging directory:
then its ``leader-epoch-checkpoint`` and ``partition.metadata`` are written there, and the
directory is moved into place (``restore.swap``), the log dir's checkpoint lines written and
the restore recorded. A segment that failed fails its partition with the one line its job
reported (the object's key and what is wrong with it); nothing of that partition is placed.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from tierflow.faults import crash_point
from tierflow.kafka.checkpoint import (
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.metadata.store import MetadataStore
from tierflow.restore.errors import RestoreError
from tierflow.restore.partition import PreparedRestore, RestoreReport, write_partition_files
from tierflow.restore.segment_files import fsync_directory, is_restored
from tierflow.restore.staging import discard_staging, restored_checkpoints, staging_dir
from tierflow.restore.swap import SwapRecord, begin_swap, end_swap, move_in, pending_swaps
from tierflow.units import counted


def place_partitions(
    store: MetadataStore, prepared: Sequence[PreparedRestore], results: Sequence[dict], actor: str
) -> list[RestoreReport]:
    """Every partition placed that can be; RestoreError at the end naming the first that
    could not, whose target (and every other failed one's) is left as it was."""
    errors = {r["segment_id"]: r["error"] for r in results if r.get("error")}
    written = {r["segment_id"] for r in results if r.get("written")}
    reports, failed = [], []
    for p in prepared:
        try:
            reports.append(finish_partition(store, p, actor, errors, written))
        except RestoreError as exc:
            discard_staging(p.plan)
            failed.append(f"{exc}; {p.plan.name} not restored, {p.plan.directory} left as it was")
    if failed:
        more = f" (and {counted(len(failed) - 1, 'more partition')})" if len(failed) > 1 else ""
        raise RestoreError(failed[0] + more)
    return reports


def finish_partition(
    store: MetadataStore,
    prepared: PreparedRestore,
    actor: str,
    errors: dict[str, str],
    written: set[str],
) -> RestoreReport:
    """The partition's files into its staging directory, then the move and the event."""
    plan = prepared.plan
    if prepared.in_place:
        return prepared.report
    failed = [errors[s.segment_id] for s in plan.segments if s.segment_id in errors]
    if failed:
        raise RestoreError(failed[0])
    staging = staging_dir(plan)
    sizes = zip(plan.segments, plan.sizes(), strict=True)
    missing = [s for s, size in sizes if not is_restored(staging, s, size)]
    if missing:
        raise RestoreError(f"{missing[0].describe()}: not written")
    crash_point("restore.before_partition_files")
    write_partition_files(plan, staging)
    fsync_directory(staging)
    ours = sum(s.segment_id in written for s in plan.segments)
    report = replace(prepared.report, written_segments=ours)
    crash_point("restore.before_swap")
    swap_id = uuid.uuid4().hex
    details = {k: v for k, v in report.as_dict().items() if k not in ("partition", "dry_run")}
    record = SwapRecord(
        swap_id=swap_id,
        name=plan.name,
        topic=plan.restored_as.name,
        partition=plan.partition,
        start_offset=plan.start_offset,
        next_offset=plan.next_offset,
        topic_id=plan.topic.topic_id,
        actor=actor,
        details={**details, "swap_id": swap_id},
    )
    begin_swap(plan.log_dir, record)
    complete_swap(store, plan.log_dir, record)
    return report


def complete_swap(store: MetadataStore, log_dir: Path, record: SwapRecord) -> None:
    """The swap's moves, checkpoint lines, event and cleanup, each step skipped or repeated
    harmlessly where a killed run had done it."""
    move_in(log_dir, record)
    write_checkpoint_lines(log_dir, record)
    crash_point("restore.before_event")
    if not _recorded(store, record):
        store.record_restore(
            record.topic_id,
            record.partition,
            actor=record.actor,
            now_ms=wall_clock_ms(),
            details=record.details,
        )
    crash_point("restore.after_event")
    end_swap(log_dir, record)


def finish_pending_swaps(store: MetadataStore, log_dir: Path) -> set[str]:
    """Finish every swap a killed run began in ``log_dir``: the partition directories moved."""
    finished = set()
    for record in pending_swaps(log_dir):
        complete_swap(store, log_dir, record)
        finished.add(record.name)
    return finished


def write_checkpoint_lines(log_dir: Path, record: SwapRecord) -> None:
    """The partition's lines of the root checkpoints (staging.restored_checkpoints; others'
    lines kept)."""
    key = (record.topic, record.partition)
    for name, offset in restored_checkpoints(record.start_offset, record.next_offset):
        path = log_dir / name
        offsets = read_offset_checkpoint(path) if path.exists() else {}
        if offsets.get(key) != offset:
            offsets[key] = offset
            write_offset_checkpoint(path, offsets)


def _recorded(store: MetadataStore, record: SwapRecord) -> bool:
    """Whether a killed run recorded this swap's restore already."""
    events = store.events(topic_id=record.topic_id, partition=record.partition, entity="restore")
    return any(json.loads(e.details or "{}").get("swap_id") == record.swap_id for e in events)
