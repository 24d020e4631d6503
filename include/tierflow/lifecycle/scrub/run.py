"""One scrub run: take segments off the store's rolling queue until the budget of bytes is
spent, check each, and record each verdict before the next.

The verdict row is the cursor: a run killed at any point has recorded every segment it
finished, and the next run starts with the segments no run has checked yet. A run always
checks at least one segment, so a segment larger than the budget is not passed over forever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tierflow.faults import crash_point
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.lifecycle.scrub.check import check_segment
from tierflow.metadata.models import RemoteLogSegment, RemoteSegmentObject
from tierflow.metadata.scrub_store import Finding, ScrubVerdict
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.segment_refs import remote_segment

# Rows read from the queue at a time; the queue is read again when a page is done.
QUEUE_PAGE = 256


@dataclass(frozen=True)
class ScrubbedSegment:
    """One segment checked: where it is, how many bytes were read, what was found."""

    topic_id: str
    partition: int
    segment_id: str
    checked_bytes: int
    finding: Finding | None

    def said(self) -> str:
        """The finding on one line: the object, what is wrong, and its segment."""
        assert self.finding is not None, "said of findings only"
        return f"{self.finding.key}: {self.finding.what} (segment {self.segment_id})"


@dataclass
class ScrubReport:
    budget_bytes: int
    segments: list[ScrubbedSegment] = field(default_factory=list)

    @property
    def checked_bytes(self) -> int:
        return sum(s.checked_bytes for s in self.segments)

    @property
    def findings(self) -> list[ScrubbedSegment]:
        return [s for s in self.segments if s.finding is not None]


@dataclass(frozen=True)
class ScrubRun:
    """What a run takes besides the store and the storage manager."""

    budget_bytes: int
    actor: str
    clock_ms: Callable[[], int]
    progress: Progress = NO_PROGRESS


def scrub(store: MetadataStore, rsm: RemoteStorageManager, run: ScrubRun) -> ScrubReport:
    """Check segments in queue order until the next would overrun the budget, or every
    finished segment has been checked once in this run."""
    report, seen = ScrubReport(run.budget_bytes), set[str]()
    while fresh := [r for r in store.scrub_queue(limit=QUEUE_PAGE) if r.segment_id not in seen]:
        for row in fresh:
            objects = store.segment_objects(row.segment_id)
            size = sum(o.size for o in objects)
            if report.segments and report.checked_bytes + size > run.budget_bytes:
                return report
            seen.add(row.segment_id)
            run.progress.note(f"{row.segment_id} ({row.start_offset}-{row.end_offset})")
            report.segments.append(_scrub_one(store, rsm, SegmentObjects(row, objects, size), run))
            run.progress.advance(1, size)
            crash_point("scrub.after_verdict")
    return report


@dataclass(frozen=True)
class SegmentObjects:
    row: RemoteLogSegment
    objects: list[RemoteSegmentObject]
    size: int  # their bytes, what the check reads of the budget


def _scrub_one(
    store: MetadataStore, rsm: RemoteStorageManager, found: SegmentObjects, run: ScrubRun
) -> ScrubbedSegment:
    row, objects, size = found.row, found.objects, found.size
    segment = remote_segment(store.topic_by_id(row.topic_id), row)
    finding = check_segment(rsm, segment, row, objects)
    store.record_scrub(ScrubVerdict(row, run.clock_ms(), size, finding), actor=run.actor)
    return ScrubbedSegment(row.topic_id, row.partition, row.segment_id, size, finding)
