"""A partition directory rebuilt from remote storage, as a broker of the same version loads it.

Written: every restored segment's files (``segment_files``), ``leader-epoch-checkpoint`` rebuilt
from the segments' epochs, ``partition.metadata`` with the topic id, and the partition's entries
in the log directory's ``log-start-offset-checkpoint`` and ``recovery-point-offset-checkpoint``
(the recovery point after the last restored offset, so the broker does not recover the log).

A restore never writes where a broker may be: it refuses a log directory whose ``.lock`` is
held, and a partition directory holding any file a restore of the same segments would not
write. A restore killed anywhere is rerun as it was asked: the segments already complete are
kept, the rest written, and a finished restore rerun changes nothing.
"""

from __future__ import annotations

import fcntl
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tierflow.faults import crash_point
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tierflow.kafka.leader_epoch import LEADER_EPOCH_CHECKPOINT, write_leader_epoch_checkpoint
from tierflow.kafka.partition_metadata import PARTITION_METADATA, write_partition_metadata
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.metadata.store import MetadataStore
from tierflow.restore.cut import find_cut
from tierflow.restore.plan import RestoredAs, RestoreError, RestorePlan, find_topic, plan_restore
from tierflow.restore.segment_files import (
    TEMPORARY_SUFFIX,
    is_restored,
    segment_file_names,
    write_segment,
)
from tierflow.rsm import RemoteStorageManager

LOCK_FILE = ".lock"  # what a running broker holds in each of its log directories


@dataclass(frozen=True)
class RestoreReport:
    partition: str
    topic_id: str  # the id the restored partition carries
    directory: str
    segments: int
    size_in_bytes: int
    already_restored: int  # segments a previous run had completed
    start_offset: int
    next_offset: int
    dry_run: bool

    def as_dict(self) -> dict:
        return asdict(self)


def restore_partition(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    topic: str,
    partition: int,
    log_dir: Path,
    to_offset: int | None = None,
    to_timestamp: int | None = None,
    restored_as: RestoredAs | None = None,
    dry_run: bool = False,
    progress: Progress = NO_PROGRESS,
    actor: str = "tierflow",
) -> RestoreReport:
    """Write ``<log_dir>/<topic>-<partition>`` from remote storage, and record it in the event
    history as done by ``actor``; a dry run writes nothing."""
    plan = plan_restore(
        store, find_topic(store, topic), partition, log_dir, to_offset, to_timestamp, restored_as
    )
    refuse_busy(plan, log_dir)
    if to_offset is not None and to_offset < plan.rows[-1].end_offset:
        last = plan.segments[-1]
        plan = replace(plan, cut=find_cut(rsm, last, plan.rows[-1].segment_size_bytes, to_offset))
    sizes = zip(plan.segments, plan.sizes(), strict=True)
    done = [is_restored(plan.directory, segment, size) for segment, size in sizes]
    report = RestoreReport(
        partition=plan.name,
        topic_id=plan.restored_as.topic_id,
        directory=str(plan.directory),
        segments=len(plan.rows),
        size_in_bytes=plan.size_in_bytes,
        already_restored=sum(done),
        start_offset=plan.start_offset,
        next_offset=plan.next_offset,
        dry_run=dry_run,
    )
    if dry_run:
        return report
    write_segments(plan, rsm, done, progress)
    write_partition_files(plan, log_dir)
    details = {k: v for k, v in report.as_dict().items() if k not in ("partition", "dry_run")}
    store.record_restore(
        plan.topic.topic_id, partition, actor=actor, now_ms=wall_clock_ms(), details=details
    )
    return report


def write_segments(
    plan: RestorePlan, rsm: RemoteStorageManager, done: list[bool], progress: Progress
) -> None:
    """Each segment not yet complete, in offset order."""
    plan.directory.mkdir(parents=True, exist_ok=True)
    last = len(plan.rows) - 1
    sizes = plan.sizes()
    for i, (segment, row) in enumerate(zip(plan.segments, plan.rows, strict=True)):
        if not done[i]:
            cut = plan.cut if i == last else None
            write_segment(rsm, segment, row.segment_size_bytes, plan.directory, cut)
            crash_point("restore.after_segment")
        progress.advance(1, sizes[i])


def write_partition_files(plan: RestorePlan, log_dir: Path) -> None:
    """What a broker reads beside the segments: epochs, topic id, log start, recovery point."""
    write_leader_epoch_checkpoint(plan.directory / LEADER_EPOCH_CHECKPOINT, plan.leader_epochs())
    write_partition_metadata(plan.directory / PARTITION_METADATA, plan.restored_as.topic_id)
    key = (plan.restored_as.name, plan.partition)
    for name, offset in (
        (LOG_START_OFFSET_CHECKPOINT, plan.start_offset),
        (RECOVERY_POINT_OFFSET_CHECKPOINT, plan.next_offset),
    ):
        path = log_dir / name
        offsets = read_offset_checkpoint(path) if path.exists() else {}
        offsets[key] = offset
        write_offset_checkpoint(path, offsets)


def refuse_busy(plan: RestorePlan, log_dir: Path) -> None:
    """RestoreError when a broker may be using the log directory or the partition directory."""
    if (log_dir / PARTITION_METADATA).exists():
        raise RestoreError(f"{log_dir}: a partition directory; give the log dir that holds it")
    lock = log_dir / LOCK_FILE
    if lock.exists() and _held(lock):
        raise RestoreError(f"{lock}: held by a running broker; stop it or restore elsewhere")
    if not plan.directory.exists():
        return
    ours = {LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA}
    for segment in plan.segments:
        ours.update(segment_file_names(segment))
    foreign = sorted(
        p.name
        for p in plan.directory.iterdir()
        if p.name not in ours and p.name.removesuffix(TEMPORARY_SUFFIX) not in ours
    )
    if foreign:
        raise RestoreError(
            f"{plan.directory}: not empty ({len(foreign)} files this restore would not write, "
            f"such as {foreign[0]}); a broker may be using it, so nothing was written"
        )


def _held(lock: Path) -> bool:
    with open(lock, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False
