"""Repair what the scrubber found, where that is safe: a dry run unless told to apply.

A damaged segment is copied again only from a local segment with the same bytes: the broker's
segment (or slice) that holds exactly its offsets, of the size and CRC-32C its copy recorded
(``log_crc32c``; the CRC-32 ``log_crc32`` for a copy made before 0011). The new copy goes
through the copy's own steps (lease, checks, upload, read back and verify,
COPY_SEGMENT_FINISHED under a fresh segment id), and only then does the damaged one go through
DELETE_SEGMENT_STARTED and DELETE_SEGMENT_FINISHED. So a reader always finds a FINISHED segment
for those offsets, and a run killed anywhere resumes: a killed re-copy is cleaned up under the
lease and made again; a re-copy that finished is found as the damaged segment's twin, and the
delete is finished.

Everything else stays an open finding, with the reason: no identical local copy (gone, or
different, or no CRC recorded), the topic not copied now (disabled). A segment the brokers
wrote (a followed or handed-over topic) is only reported: tierflow never copies those.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise

from crc32c import crc32c

from tierflow.config import default
from tierflow.faults import crash_point
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.segment_slice import slice_segment
from tierflow.lifecycle.clock import Clock
from tierflow.lifecycle.copy.candidates import CopyCandidate, sliced_from
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.lease import PartitionBusyError
from tierflow.lifecycle.copy.plan import CopyFailedError
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_recopy
from tierflow.lifecycle.copy.rewrite import RewriteResult, rewrite_segment
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.errors import LeaseLostError
from tierflow.metadata.models import TIERFLOW_COPIER, RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.transform.chunking import read_chunks

# The lease owner of every repair: a rerun (the DAG's retry, the CLI again) takes over at once.
REPAIR_OWNER = "scrub-repair"
_READ = 4 << 20
# What stops one segment's re-copy; the finding stays open and says why.
_RECOPY_ERRORS = (CopyFailedError, KafkaFormatError, PartitionBusyError, LeaseLostError)

LocalLogs = Callable[[str, int], PartitionLog | None]


class RepairAction(StrEnum):
    RECOPIED = "recopied"  # copied again from the identical local segment; the damaged one deleted
    REPLACED = "replaced"  # a good copy of the same offsets was there (a rerun): damaged deleted
    REPORTED = "reported"  # the brokers own it: tierflow reports only
    LEFT_OPEN = "left-open"  # nothing safe to do; ``detail`` says why


@dataclass(frozen=True)
class Repair:
    topic: str
    partition: int
    segment_id: str
    action: RepairAction
    detail: str
    dry_run: bool
    replacement: str | None = None

    @property
    def repairable(self) -> bool:
        """A good copy holds (or, in a dry run, would hold) the offsets in place of the damaged."""
        return self.action in (RepairAction.RECOPIED, RepairAction.REPLACED)

    @property
    def fixed(self) -> bool:
        """Done, not planned: the damaged copy is gone and a good one holds its offsets."""
        return self.repairable and not self.dry_run

    def line(self) -> str:
        """One line for a person: which segment, what was (or would be) done, and why."""
        action = f"would be {self.action}" if self.dry_run else str(self.action)
        where = f"{self.topic}-{self.partition} segment {self.segment_id}"
        return f"{where}: {action}: {self.detail}"


def _every_partition(_topic: str, _partition: int) -> bool:
    return True


@dataclass(frozen=True)
class RepairRun:
    """How a repair runs: ``local_log`` finds a partition's leader replica (None: not here);
    ``takes`` says which partitions' findings are this run's (a DAG lane: those its broker
    leads, so each finding is repaired by the worker that holds its local copy)."""

    actor: str
    clock_ms: Clock
    local_log: LocalLogs
    dry_run: bool = True
    lease_ttl_s: int = default("copy_lease_ttl_s")
    takes: Callable[[str, int], bool] = _every_partition


def repair_findings(
    store: MetadataStore, rsm: RemoteStorageManager, run: RepairRun
) -> list[Repair]:
    """Each open finding this run takes repaired, or said why not (a dry run changes nothing)."""
    repairs = []
    for found in store.open_findings_of():
        row = found.segment
        topic = store.topic_by_id(row.topic_id)
        if run.takes(topic.name, row.partition):
            repairs.append(_repair_one(store, rsm, _Said(topic, row, run.dry_run), run))
    return repairs


def _repair_one(
    store: MetadataStore, rsm: RemoteStorageManager, said: _Said, run: RepairRun
) -> Repair:
    topic, row = said.topic, said.row
    if row.writer != TIERFLOW_COPIER or not topic.copied_by_tierflow:
        return said(RepairAction.REPORTED, "the brokers own this segment; tierflow only reports")
    twin = _good_twin(store, row)
    if twin is not None:
        if not run.dry_run:
            _delete_damaged(store, rsm, topic, row, run)
        return said(RepairAction.REPLACED, f"segment {twin} holds the same offsets", twin)
    if row.state != S.COPY_SEGMENT_FINISHED:
        return said(RepairAction.LEFT_OPEN, f"it is {row.state}")
    log_ = run.local_log(topic.name, row.partition)
    local = identical_local(log_, row)
    if isinstance(local, str):
        return said(RepairAction.LEFT_OPEN, local)
    where = f"from {local.source.segment.log_path}"
    if run.dry_run:
        return said(RepairAction.RECOPIED, f"would copy it again {where}")
    assert log_ is not None, "identical_local found it there"
    try:
        new = _recopy(store, rsm, log_, local, run)
    except _NotRecopied as exc:
        return said(RepairAction.LEFT_OPEN, str(exc))
    store.record_repair(row, new, actor=run.actor, now_ms=run.clock_ms())
    crash_point("repair.after_recopy")
    _delete_damaged(store, rsm, topic, row, run)
    return said(RepairAction.RECOPIED, f"copied again {where}", new)


@dataclass(frozen=True)
class _Said:
    topic: Topic
    row: RemoteLogSegment
    dry_run: bool

    def __call__(self, action: RepairAction, detail: str, replacement: str | None = None) -> Repair:
        row = self.row
        return Repair(
            self.topic.name,
            row.partition,
            row.segment_id,
            action,
            detail,
            self.dry_run,
            replacement,
        )


def _good_twin(store: MetadataStore, row: RemoteLogSegment) -> str | None:
    """Another FINISHED segment of exactly the same offsets with no open finding."""
    flagged = store.flagged_segment_ids(row.topic_id, row.partition)
    for other in store.segments(row.topic_id, row.partition, states=[S.COPY_SEGMENT_FINISHED]):
        same = (other.start_offset, other.end_offset) == (row.start_offset, row.end_offset)
        if same and other.segment_id != row.segment_id and other.segment_id not in flagged:
            return other.segment_id
    return None


@dataclass(frozen=True)
class LocalCopy:
    """The local segment (or slice) a damaged copy was made from, and the CRC-32C of its
    bytes, which the re-copy's own read must give again."""

    source: CopyCandidate
    crc32c: int


def identical_local(log_: PartitionLog | None, row: RemoteLogSegment) -> LocalCopy | str:
    """The local segment (or slice) with the bytes ``row``'s copy was made from; else why not."""
    if row.log_crc32c is None and row.log_crc32 is None:
        return "its copy recorded no CRC-32 of its log (copied before tierflow recorded one)"
    if log_ is None:
        return "no local replica of the partition in the log dirs"
    offsets = f"offsets {row.start_offset}-{row.end_offset}"
    for segment, after in pairwise(log_.segments()):
        if segment.base_offset <= row.start_offset and after.base_offset == row.end_offset + 1:
            candidate = sliced_from(CopyCandidate(segment, after.base_offset), row.start_offset)
            break
    else:
        return f"no local segment holds exactly {offsets} any more"
    try:
        size, crc32c_, crc32 = _size_and_crcs(candidate)
    except (KafkaFormatError, OSError) as exc:  # rolled, deleted or cleaned under us
        return f"{segment.log_path} cannot be read as {offsets}: {exc}"
    if size == 0:  # it ends below those offsets: the segment that held them is gone
        return f"no local segment holds exactly {offsets} any more"
    name, crc, recorded = (
        ("CRC-32C", crc32c_, row.log_crc32c)
        if row.log_crc32c is not None
        else ("CRC-32", crc32, row.log_crc32)
    )
    if (size, crc) != (row.segment_size_bytes, recorded):
        return (
            f"{segment.log_path} differs from what was copied: {size} bytes with {name} "
            f"{crc:08x}, the copy had {row.segment_size_bytes} with {recorded:08x}"
        )
    return LocalCopy(candidate, crc32c_)


def _size_and_crcs(candidate: CopyCandidate) -> tuple[int, int, int]:
    """The size, CRC-32C and CRC-32 of the bytes a copy of ``candidate`` uploads: the whole
    file, or from its slice's first batch on."""
    position = 0
    if candidate.slice_from is not None:
        position = slice_segment(candidate.segment, candidate.slice_from).position
    size, crc_c, crc = 0, 0, 0
    for chunk in read_chunks(candidate.segment.log_path, _READ, start=position):
        size, crc_c, crc = size + len(chunk), crc32c(chunk, crc_c), zlib.crc32(chunk, crc)
    return size, crc_c, crc


class _NotRecopied(Exception):
    """Why a re-copy did not finish; the finding stays open and says so."""


def _recopy(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    log_: PartitionLog,
    local: LocalCopy,
    run: RepairRun,
) -> str:
    """The new segment's id, once FINISHED (read back and verified by finalize)."""
    owner = CopyOwner(REPAIR_OWNER, run.lease_ttl_s)
    try:
        plan = prepare_recopy(
            log_, store, rsm=rsm, owner=owner, candidate=local.source, clock=run.clock_ms
        )
        results = {
            job.segment_id: _same_as_before(rewrite_segment(job, rsm), local) for job in plan.jobs
        }
        finalize_copy(plan, results, store, rsm, owner=REPAIR_OWNER, clock=run.clock_ms)
    except _RECOPY_ERRORS as exc:
        raise _NotRecopied(f"the re-copy failed: {exc}") from exc
    if not plan.jobs:  # finalize released the lease
        raise _NotRecopied(f"not copied again: {plan.report.skipped or 'nothing was planned'}")
    return plan.jobs[0].segment_id


def _same_as_before(result: RewriteResult, local: LocalCopy) -> RewriteResult:
    """The upload fails (and finalize removes it) unless it read the bytes the damaged copy had:
    the local file could have changed since it was compared."""
    crc = result.scanned.log_crc32c if result.scanned else None
    if result.error is None and crc != local.crc32c:
        return RewriteResult(result.segment_id, error=f"read CRC-32C {crc}, not {local.crc32c}")
    return result


def _delete_damaged(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    row: RemoteLogSegment,
    run: RepairRun,
) -> None:
    delete_remote_segment(store, rsm, topic, row, actor=run.actor, now_ms=run.clock_ms())
