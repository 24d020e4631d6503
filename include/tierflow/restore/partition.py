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
from tierflow.metadata.store import MetadataStore
from tierflow.restore.cut import find_cut
from tierflow.restore.plan import RestoredAs, RestoreError, RestorePlan, find_topic, plan_restore
from tierflow.restore.segment_files import TEMPORARY_SUFFIX, is_restored, segment_file_names
from tierflow.restore.segment_job import RestoreSegmentJob
from tierflow.rsm import RemoteStorageManager
from tierflow.units import human_bytes

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

    def describe(self, verb: str | None = None) -> str:
        """One line for the CLI and the task log."""
        verb = verb or ("would restore" if self.dry_run else "restored")
        kept = f", {self.already_restored} already there" if self.already_restored else ""
        return (
            f"{self.partition}: {verb} {self.segments} segments "
            f"({human_bytes(self.size_in_bytes)}), offsets {self.start_offset}-"
            f"{self.next_offset - 1}, into {self.directory}{kept}"
        )


@dataclass(frozen=True)
class PreparedRestore:
    """A partition's restore planned and checked, its cut found: nothing written yet."""

    plan: RestorePlan
    report: RestoreReport
    done: list[bool]  # per segment: complete from a previous run

    def jobs(self) -> list[RestoreSegmentJob]:
        """The segments still to write, as jobs for Spark or this process."""
        last = len(self.plan.rows) - 1
        rows = zip(self.plan.segments, self.plan.rows, self.done, strict=True)
        return [
            RestoreSegmentJob.build(
                segment,
                row.segment_size_bytes,
                self.plan.directory,
                self.plan.cut if i == last else None,
            )
            for i, (segment, row, done) in enumerate(rows)
            if not done
        ]

    @property
    def restored_bytes(self) -> int:
        return sum(size for size, done in zip(self.plan.sizes(), self.done, strict=True) if done)


def prepare_partition(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: str,
    partition: int,
    log_dir: Path,
    to_offset: int | None,
    to_timestamp: int | None,
    restored_as: RestoredAs | None,
    dry_run: bool,
) -> PreparedRestore:
    """The plan, checked against the target (``refuse_busy``), cut where it ends, and which
    segments a previous run completed."""
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
    return PreparedRestore(plan, report, done)


def raise_failures(results: list[dict]) -> None:
    """RestoreError naming the first segment that failed, and how many did."""
    failed = [r["error"] for r in results if r["error"]]
    if failed:
        more = f" (and {len(failed) - 1} more segments)" if len(failed) > 1 else ""
        raise RestoreError(f"{failed[0]}{more}; rerun the restore to continue")


def finish_partition(store: MetadataStore, prepared: PreparedRestore, actor: str) -> RestoreReport:
    """Once every segment is in place: the partition's files, and the event."""
    plan = prepared.plan
    sizes = zip(plan.segments, plan.sizes(), strict=True)
    missing = [s.start_offset for s, size in sizes if not is_restored(plan.directory, s, size)]
    if missing:
        raise RestoreError(
            f"{plan.directory}: segment at offset {missing[0]} is not restored; rerun the restore"
        )
    crash_point("restore.before_partition_files")
    write_partition_files(plan, plan.log_dir)
    crash_point("restore.before_event")
    report = prepared.report
    details = {k: v for k, v in report.as_dict().items() if k not in ("partition", "dry_run")}
    store.record_restore(
        plan.topic.topic_id, plan.partition, actor=actor, now_ms=wall_clock_ms(), details=details
    )
    return report


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
