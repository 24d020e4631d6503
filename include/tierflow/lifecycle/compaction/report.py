"""What a compaction run of a partition was asked, planned and did."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tierflow.config import default
from tierflow.lifecycle.compaction.job import CompactionJob
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.partition_registry import Lease


@dataclass(frozen=True)
class CompactionOptions:
    now_ms: int
    force: bool = False  # compact whatever the dirty ratio says (a run asked for by hand)
    lease_ttl_s: int = default("copy_lease_ttl_s")
    # The process holding the lease from prepare to finalize (a CLI run; copy/lease.py).
    holder: LeaseHolder | None = None


@dataclass
class CompactionReport:
    topic: str
    partition: int
    reason: str | None = None  # why the range was compacted
    skipped: str | None = None
    cleaned_up: list[str] = field(default_factory=list)  # killed attempts removed
    replaced: list[str] = field(default_factory=list)  # source segments deleted
    written: list[list[int]] = field(default_factory=list)  # [start, end, bytes] of new ones
    unchanged: int = 0  # groups the compaction would not have changed
    source_bytes: int = 0  # of the groups replaced
    pending: list[list[int]] = field(default_factory=list)  # dry run: [start, end, bytes]

    @property
    def reclaimed_bytes(self) -> int:
        return self.source_bytes - sum(w[2] for w in self.written)

    def as_dict(self) -> dict:
        return {**asdict(self), "reclaimed_bytes": self.reclaimed_bytes}

    @classmethod
    def from_dict(cls, raw: dict) -> CompactionReport:
        return cls(**{k: v for k, v in raw.items() if k != "reclaimed_bytes"})


@dataclass
class CompactionPlan:
    """What prepare recorded: the job, and the taking of the lease finalize writes under."""

    report: CompactionReport
    job: CompactionJob | None = None
    lease: Lease | None = None
    dry_run: bool = False


class CompactionFailedError(RuntimeError):
    """Some groups failed; their new segments are deleted and their sources stay."""
