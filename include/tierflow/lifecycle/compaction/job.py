"""One partition's compaction job: the two passes over its range, no state written.

Airflow records each group's new segment COPY_SEGMENT_STARTED first (``swap.prepare``), then
hands the job to Spark or runs it in the worker. Pass one reads every source segment through
the ranged-read path and builds the latest offset of each key (``offset_map``); pass two
streams each group's staying batches into the upload of its new segment (``rewrite``). A group
the compaction would not change is not written at all ("unchanged"), nor is one from which
every record goes ("empty"). Only Airflow turns results into state.

The same inputs always give the same bytes, so a rerun simply compacts again.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field

from tierflow.faults import crash_point
from tierflow.kafka.read_committed import aborted_between
from tierflow.kafka.txn_index import AbortedTxn
from tierflow.lifecycle.compaction.offset_map import (
    KeptOffsets,
    SegmentScan,
    kept_offsets,
    merge_latest,
    scan_segment,
)
from tierflow.lifecycle.compaction.rewrite import group_stream
from tierflow.lifecycle.remote_log import remote_aborted
from tierflow.rsm import ObjectInfo, RemoteSegment, RemoteStorageManager
from tierflow.units import failure_line

WRITTEN, UNCHANGED, EMPTY, FAILED = "written", "unchanged", "empty", "failed"


@dataclass(frozen=True)
class CompactionGroup:
    """A new segment (recorded STARTED) and the consecutive source segments it replaces."""

    target: RemoteSegment
    sources: tuple[RemoteSegment, ...]
    source_bytes: int  # the sources' sizes, as recorded

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> CompactionGroup:
        sources = tuple(RemoteSegment(**s) for s in raw["sources"])
        return cls(RemoteSegment(**raw["target"]), sources, int(raw["source_bytes"]))


@dataclass(frozen=True)
class CompactionJob:
    topic: str
    topic_id: str
    partition: int
    groups: tuple[CompactionGroup, ...]
    tombstone_horizon_ms: int  # tombstones older than this go (now - delete.retention.ms)
    segment_bytes: int
    # Later tiered segments with a .txnindex: an ABORT marker after the range may abort
    # records in it (a transaction open at the tiered log's end cuts the range instead).
    later: tuple[RemoteSegment, ...] = ()

    @property
    def source_bytes(self) -> int:
        return sum(group.source_bytes for group in self.groups)

    @property
    def size_in_bytes(self) -> int:
        """What the batch is sized by: the sources' bytes."""
        return self.source_bytes

    @property
    def sources(self) -> list[RemoteSegment]:
        return [s for g in self.groups for s in g.sources]

    def as_dict(self) -> dict:
        return asdict(self)  # nested segments and groups as plain dicts, for JSON

    @classmethod
    def from_dict(cls, raw: dict) -> CompactionJob:
        groups = tuple(CompactionGroup.from_dict(g) for g in raw["groups"])
        later = tuple(RemoteSegment(**s) for s in raw.get("later", ()))
        return cls(**{**raw, "groups": groups, "later": later})


@dataclass(frozen=True)
class CompactionResult:
    """What became of one group: its new segment written (with the objects to verify, the
    size and largest timestamp it turned out to have), not needed, or failed."""

    segment_id: str
    outcome: str
    objects: list[ObjectInfo] = field(default_factory=list)
    size_in_bytes: int = 0
    max_timestamp_ms: int = -1
    error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict) -> CompactionResult:
        return cls(**{**raw, "objects": [ObjectInfo(**o) for o in raw["objects"]]})


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
    except Exception as exc:  # every group fails with it; Airflow discards them
        return [
            CompactionResult(g.target.segment_id, FAILED, error=failure_line(exc))
            for g in job.groups
        ]
    crash_point("compaction.after_scan")
    return [compact_group(job, group, scans, aborted, kept, rsm) for group in job.groups]


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
    except Exception as exc:  # Airflow discards the segment and fails the task with this
        return CompactionResult(target, FAILED, error=failure_line(exc, group.target.describe()))
    crash_point("compaction.after_upload")
    return CompactionResult(target, WRITTEN, objects, indexes.size_in_bytes, indexes.max_timestamp)
