"""A partition's restore planned and checked against its target, before anything is written.

A restore never writes where a broker may be: it refuses a log directory whose ``.lock`` is
held, and a partition directory holding any file a restore of the same segments would not
write. It builds the partition in a staging directory (``staging``) and moves it into place
at the end (``place``, ``swap``): all or nothing. A target that already holds exactly what the
restore would write is left alone, and nothing is recorded.
"""

from __future__ import annotations

import fcntl
from collections.abc import Collection
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from tierflow.kafka.leader_epoch import LEADER_EPOCH_CHECKPOINT, write_leader_epoch_checkpoint
from tierflow.kafka.partition_metadata import PARTITION_METADATA, write_partition_metadata
from tierflow.metadata.store import MetadataStore
from tierflow.restore.asked import RestoreRequest
from tierflow.restore.cut import find_cut
from tierflow.restore.plan import RestoredAs, RestoreError, RestorePlan, find_topic, plan_restore
from tierflow.restore.segment_files import TEMPORARY_SUFFIX, is_restored, segment_file_names
from tierflow.restore.segment_job import RestoreSegmentJob
from tierflow.restore.staging import discard_staging, in_place, prune_staging, staging_dir
from tierflow.rsm import ObjectInfo, RemoteStorageManager
from tierflow.units import counted, human_bytes

LOCK_FILE = ".lock"  # what a running broker holds in each of its log directories


@dataclass(frozen=True)
class RestoreReport:
    partition: str
    topic_id: str  # the id the restored partition carries
    directory: str
    segments: int  # in the partition as restored
    size_in_bytes: int
    already_restored: int  # segments an earlier, killed run had written (kept)
    start_offset: int
    next_offset: int
    dry_run: bool
    written_segments: int = 0  # segments this run wrote
    unchanged: bool = False  # the target held this restore already: nothing written or recorded

    def as_dict(self) -> dict:
        return asdict(self)

    def describe(self, verb: str | None = None) -> str:
        """One line for the CLI and the task log."""
        what = (
            f"{counted(self.segments, 'segment')} ({human_bytes(self.size_in_bytes)}), "
            f"offsets {self.start_offset}-{self.next_offset - 1}"
        )
        if self.unchanged:
            nothing = "nothing to write" if self.dry_run else "nothing written"
            return f"{self.partition}: already restored, {what}, in {self.directory}; {nothing}"
        verb = verb or ("would restore" if self.dry_run else "restored")
        earlier = (
            f", {self.already_restored} of them written by an earlier run"
            if self.already_restored
            else ""
        )
        return f"{self.partition}: {verb} {what}, into {self.directory}{earlier}"


@dataclass(frozen=True)
class PreparedRestore:
    """A partition's restore planned and checked, its cut found: nothing written yet."""

    plan: RestorePlan
    report: RestoreReport
    done: list[bool]  # per segment: complete in the staging directory (or in place)
    objects: dict[str, list[ObjectInfo]]  # per segment still to write: what its objects hold
    in_place: bool = False  # nothing left to do: the target holds this restore

    def jobs(self) -> list[RestoreSegmentJob]:
        """The segments still to write into the staging directory, for Spark or this process."""
        last = len(self.plan.rows) - 1
        rows = zip(self.plan.segments, self.plan.rows, self.done, strict=True)
        return [
            RestoreSegmentJob.build(
                segment,
                row.segment_size_bytes,
                staging_dir(self.plan),
                self.plan.cut if i == last else None,
                self.objects.get(segment.segment_id, []),
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
    request: RestoreRequest,
    partition: int,
    restored_as: RestoredAs | None,
    *,
    swapped: Collection[str] = (),
) -> PreparedRestore:
    """``partition`` of ``request``'s topic planned as it asks (restored under ``restored_as``,
    None: the topic's own name and id), checked against the target (``refuse_busy``), cut
    where it ends, and what is left to write: nothing when the target holds it (moved there by
    this run when its name is in ``swapped``, the swaps it finished for killed runs), else the
    segments missing from the staging directory."""
    log_dir, to_offset, dry_run = request.to, request.to_offset, request.dry_run
    topic = find_topic(store, request.topic)
    plan = plan_restore(
        store, topic, partition, log_dir, to_offset, request.to_timestamp, restored_as
    )
    refuse_busy(plan, log_dir)
    plan = _with_cut(rsm, plan, to_offset)
    if in_place(plan):
        if not dry_run:
            discard_staging(plan)  # what a killed restore of another cut left: no longer needed
        every = [True] * len(plan.rows)
        moved = plan.name in swapped
        report = _report(plan, len(plan.rows) if moved else 0, dry_run, unchanged=not moved)
        return PreparedRestore(plan, report, every, {}, in_place=True)
    if not dry_run:
        prune_staging(plan)
    sizes = zip(plan.segments, plan.sizes(), strict=True)
    done = [is_restored(staging_dir(plan), segment, size) for segment, size in sizes]
    objects = {} if dry_run else _objects(store, plan, done)
    return PreparedRestore(plan, _report(plan, sum(done), dry_run), done, objects)


def _with_cut(rsm: RemoteStorageManager, plan: RestorePlan, to_offset: int | None) -> RestorePlan:
    """The plan ending inside its last segment, if ``to_offset`` is before that segment's last
    batch; a cut that keeps the whole segment is none (the segment keeps its snapshot)."""
    last = plan.rows[-1]
    if to_offset is None or to_offset >= last.end_offset:
        return plan
    cut = find_cut(rsm, plan.segments[-1], last.segment_size_bytes, to_offset)
    return replace(plan, cut=cut) if cut.size_in_bytes < last.segment_size_bytes else plan


def _objects(
    store: MetadataStore, plan: RestorePlan, done: list[bool]
) -> dict[str, list[ObjectInfo]]:
    """The objects of each segment still to write, as its copy uploaded and verified them."""
    return {
        row.segment_id: [
            ObjectInfo(o.key, o.size, o.sha256) for o in store.segment_objects(row.segment_id)
        ]
        for row, complete in zip(plan.rows, done, strict=True)
        if not complete
    }


def _report(
    plan: RestorePlan, kept: int, dry_run: bool, *, unchanged: bool = False
) -> RestoreReport:
    return RestoreReport(
        partition=plan.name,
        topic_id=plan.restored_as.topic_id,
        directory=str(plan.directory),
        segments=len(plan.rows),
        size_in_bytes=plan.size_in_bytes,
        already_restored=kept,
        start_offset=plan.start_offset,
        next_offset=plan.next_offset,
        dry_run=dry_run,
        unchanged=unchanged,
    )


def write_partition_files(plan: RestorePlan, directory: Path) -> None:
    """What a broker reads beside the segments, in the partition: epochs and topic id."""
    write_leader_epoch_checkpoint(directory / LEADER_EPOCH_CHECKPOINT, plan.leader_epochs())
    write_partition_metadata(directory / PARTITION_METADATA, plan.restored_as.topic_id)


def refuse_locked(log_dir: Path) -> None:
    """RestoreError when ``log_dir`` is a partition directory, or a broker is using it."""
    if (log_dir / PARTITION_METADATA).exists():
        raise RestoreError(f"{log_dir}: a partition directory; give the log dir that holds it")
    lock = log_dir / LOCK_FILE
    if lock.exists() and _held(lock):
        raise RestoreError(f"{lock}: held by a running broker; stop it or restore elsewhere")


def refuse_busy(plan: RestorePlan, log_dir: Path) -> None:
    """RestoreError when a broker may be using the log directory or the partition directory."""
    refuse_locked(log_dir)
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
