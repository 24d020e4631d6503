"""Kafka's cleaner in two passes over one partition's range, on a worker core; no state written.

Pass one reads every source segment through the ranged-read path and builds the latest offset
of each key (``offset_map``); pass two streams each group's staying batches into the upload of
its new segment (``rewrite``). ``PARTITION_COMPACTION`` runs both for a whole job, as the engine's
processes do below the Spark threshold; Spark runs them as two stages of its own
(``spark_apps/compact_segments.py``: ``scan_source`` per source segment, the keys meeting in a
shuffle, then ``write_group`` per group). The same inputs always give the same bytes, so a
rerun simply compacts again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from tierflow.engine.kind import JobKind
from tierflow.engine.worker import Worker
from tierflow.faults import crash_point
from tierflow.kafka.read_committed import aborted_between
from tierflow.kafka.txn_index import AbortedTxn
from tierflow.lifecycle.compaction.job import (
    EMPTY,
    FAILED,
    UNCHANGED,
    WRITTEN,
    CompactionGroup,
    CompactionJob,
    CompactionResult,
)
from tierflow.lifecycle.compaction.offset_map import (
    KeptOffsets,
    SegmentScan,
    kept_offsets,
    merge_latest,
    scan_segment,
)
from tierflow.lifecycle.compaction.rewrite import group_stream
from tierflow.lifecycle.remote_log import remote_aborted
from tierflow.rsm import RemoteSegment, RemoteStorageManager
from tierflow.units import failure_line

# (job index, the source segment's fields, the aborted transactions a read of it needs)
SourceItem = tuple[int, dict, list[AbortedTxn]]
# (the job's fields, the group's index in it, its sources' scans, the job's aborted txns)
GroupItem = tuple[dict, int, dict[str, SegmentScan], list[AbortedTxn]]


def scan_sources(
    rsm: RemoteStorageManager, sources: Sequence[RemoteSegment], aborted: Sequence[AbortedTxn]
) -> Iterator[SegmentScan]:
    """Pass one in this process, segment after segment (Spark scans them side by side)."""
    for s in sources:
        chunks = rsm.iter_log_segment(s)
        yield scan_segment(s.segment_id, chunks, aborted_in(aborted, s), s.describe())


def aborted_in(aborted: Sequence[AbortedTxn], segment: RemoteSegment) -> list[AbortedTxn]:
    """The aborted transactions a read of the segment alone must know of: those still open
    at its start or begun in it (a transaction aborted earlier would leave its producer
    looking aborted for the rest of the segment)."""
    return aborted_between(aborted, segment.start_offset, segment.end_offset)


def run_compaction_job(job: CompactionJob, rsm: RemoteStorageManager) -> list[CompactionResult]:
    """Both passes over the job's range; one result per group, failures included."""
    try:
        aborted = remote_aborted(rsm, [*job.sources, *job.later])
        scans = {s.segment_id: s for s in scan_sources(rsm, job.sources, aborted)}
        merged = merge_latest(scans[s.segment_id].latest for s in job.sources)
        kept = kept_offsets(merged, job.tombstone_horizon_ms)
    except Exception as exc:  # every group fails with it; finalize discards them
        return failed_groups(job, failure_line(exc))
    crash_point("compaction.after_scan")
    return [compact_group(job, group, scans, aborted, kept, rsm) for group in job.groups]


def failed_groups(job: CompactionJob, error: str) -> list[CompactionResult]:
    return [CompactionResult(g.target.segment_id, FAILED, error=error) for g in job.groups]


def compact_group(
    job: CompactionJob,
    group: CompactionGroup,
    scans: dict[str, SegmentScan],
    aborted: Sequence[AbortedTxn],
    kept: KeptOffsets,
    rsm: RemoteStorageManager,
) -> CompactionResult:
    """Write the group's new segment, unless it would change nothing or hold nothing."""
    target = group.target.segment_id
    source_scans = [scans[s.segment_id] for s in group.sources]
    if not any(scan.changed_by(kept) for scan in source_scans):
        return CompactionResult(target, UNCHANGED)
    if not any(scan.keeps_any(kept) for scan in source_scans):
        return CompactionResult(target, EMPTY)
    try:
        stream, indexes = group_stream(
            rsm, group.target, group.sources, aborted, kept, job.segment_bytes
        )
        objects = rsm.copy_log_segment_stream(group.target, stream)
    except Exception as exc:  # finalize discards the segment and fails the task with this
        return CompactionResult(target, FAILED, error=failure_line(exc, group.target.describe()))
    crash_point("compaction.after_upload")
    return CompactionResult(target, WRITTEN, objects, indexes.size_in_bytes, indexes.max_timestamp)


def scan_source(worker: Worker, item: SourceItem) -> tuple[int, str, SegmentScan]:
    """Spark's pass one over one source segment: (job index, segment id, its scan)."""
    index, fields, aborted = item
    source = RemoteSegment(**fields)
    chunks = worker.rsm.iter_log_segment(source)
    return (
        index,
        source.segment_id,
        scan_segment(source.segment_id, chunks, aborted, source.describe()),
    )


def without_map(scan: SegmentScan) -> SegmentScan:
    """A scan's fate flags alone: the map itself goes through the shuffle, not the driver."""
    return replace(scan, latest={})


def write_group(worker: Worker, item: GroupItem, kept: KeptOffsets) -> dict:
    """Spark's pass two for one group: its segment written (or found unneeded); the result."""
    raw_job, group_index, scans, aborted = item
    job = CompactionJob.from_dict(raw_job)
    group = job.groups[group_index]
    return compact_group(job, group, scans, aborted, kept, worker.rsm).as_dict()


def _compact_on(job: CompactionJob, worker: Worker) -> list[dict]:
    return [result.as_dict() for result in run_compaction_job(job, worker.rsm)]


def _compaction_died(job: CompactionJob, exc: BaseException) -> list[dict]:
    where = f"{job.topic}-{job.partition}"
    return [
        r.as_dict() for r in failed_groups(job, f"{where}: the process compacting it died ({exc})")
    ]


# The compaction's jobs on a worker: one partition's groups, both passes, per job.
PARTITION_COMPACTION = JobKind(
    "compacting partitions",
    "compaction.worker",
    CompactionJob.from_dict,
    _compact_on,
    _compaction_died,
)
