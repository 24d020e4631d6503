"""What a partition's copy plans and reports: the values prepare, the rewrite and finalize
pass each other (steps.py tells the three steps)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tierflow.lifecycle.copy.rewrite import RewriteJob
from tierflow.metadata.partition_registry import Lease
from tierflow.metadata.states import RemoteLogSegmentState

# What an interrupted attempt leaves: prepare_copy cleans these up under the lease.
UNFINISHED = (
    RemoteLogSegmentState.COPY_SEGMENT_STARTED,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED,
)


class TopicIdMismatchError(ValueError):
    """The log directory's partition.metadata names another topic id than the store."""


class CopyFailedError(RuntimeError):
    """Some segments could not be copied; they were cleaned up and the rerun retries them."""


@dataclass(frozen=True)
class CopiedSegment:
    segment_id: str
    start_offset: int
    end_offset: int
    size_in_bytes: int


@dataclass
class PartitionCopyReport:
    topic: str
    partition: int
    copied: list[CopiedSegment] = field(default_factory=list)
    cleaned_up: list[str] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)  # base offsets a dry run would copy
    pending_bytes: int = 0  # and their local log files' total size
    skipped: str | None = None
    # Why copying stops below the high watermark: an open transaction holds the LSO back.
    held_back: str | None = None
    # Why a compacted partition's offsets wait: the log cleaner has not cleaned them yet, or
    # is replacing segments now.
    waiting: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class CopyPlan:
    """What prepare_copy recorded as COPY_SEGMENT_STARTED, in ascending offset order."""

    report: PartitionCopyReport
    jobs: list[RewriteJob] = field(default_factory=list)
    # This attempt's taking of the partition lease, which fences its writes (None: no lease
    # was taken, or a plan serialized before leases had tokens).
    lease: Lease | None = None
    # A segment that failed its checks: the ones before it are copied, then this is raised.
    blocked_by: Exception | None = None

    @property
    def total_bytes(self) -> int:
        return sum(job.size_in_bytes for job in self.jobs)
