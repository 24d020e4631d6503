"""Copying many partitions in one batch, outside Airflow: what ``tierflow copy`` runs.

The same three steps as the segment_copy DAG (steps.py): every partition is prepared under its
own fenced lease, then the segments of all of them are rewritten together, on every core or
on Spark (``rewrite``), then each partition is finalized: verified, FINISHED in offset order,
lease released. A partition that fails is named in its outcome and the others go ahead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.copy.finalize import UploadChecks, finalize_copy, release_plan
from tierflow.lifecycle.copy.plan import CopiedSegment, CopyPlan, PartitionCopyReport
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.lease_holder import LeaseHolder
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import RemoteStorageManager
from tierflow.units import error_line

log = logging.getLogger(__name__)

Rewrite = Callable[[Sequence[RewriteJob], Progress], Iterable[RewriteResult]]


@dataclass
class CopyOutcome:
    """One partition's copy: the library's report, or the one-line reason it failed."""

    topic: str
    partition: int
    report: PartitionCopyReport | None = None
    error: str | None = None

    @property
    def copied_bytes(self) -> int:
        return sum(s.size_in_bytes for s in self.report.copied) if self.report else 0

    def as_dict(self) -> dict:
        report = self.report.as_dict() if self.report else {}
        return {"topic": self.topic, "partition": self.partition, **report, "error": self.error}


Step = Literal["prepare", "rewrite", "finalize"]


@dataclass
class CopyPhases:
    """Wall seconds of each step of a batch (``tierflow copy --json``): what runs outside the
    rewrite is the copy's serial part, which must not grow with the data."""

    prepare_s: float = 0.0
    rewrite_s: float = 0.0
    finalize_s: float = 0.0

    @contextmanager
    def timing(self, step: Step) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            name = f"{step}_s"
            setattr(self, name, getattr(self, name) + time.perf_counter() - started)

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in vars(self).items()}


@dataclass(frozen=True)
class BatchCopy:
    """Who copies and how: the lease owner and its TTL, and the rewrite of the batch."""

    owner: str
    lease_ttl_s: int
    rewrite: Rewrite
    dry_run: bool = False
    progress: Progress = NO_PROGRESS
    # Told of each segment once FINISHED, with its topic and partition.
    on_copied: Callable[[str, int, CopiedSegment], None] | None = None
    # The process holding the leases from prepare to finalize (a CLI run; lease.py).
    holder: LeaseHolder | None = None
    # Filled in as the batch goes (a mutable record in a frozen description).
    phases: CopyPhases = field(default_factory=CopyPhases)


def copy_partitions(
    logs: Sequence[PartitionLog], store: MetadataStore, rsm: RemoteStorageManager, how: BatchCopy
) -> list[CopyOutcome]:
    """Prepare every partition, rewrite all their segments at once, finalize each. Partitions
    of topics that are not registered are left out: tierflow does not tier them.

    If the batch as a whole breaks (Ctrl-C, Spark cannot start), every lease still held is
    given back first, so a rerun by another owner does not wait out their TTL."""
    prepared: list[tuple[CopyOutcome, CopyPlan | None] | None] = []
    try:
        with how.phases.timing("prepare"):
            prepared.extend(_prepare(log_, store, rsm, how) for log_ in logs)
        outcomes = [outcome for outcome, _plan in filter(None, prepared)]
        plans = [plan for _outcome, plan in filter(None, prepared) if plan is not None]
        if how.dry_run:
            return outcomes
        jobs = [job for plan in plans for job in plan.jobs]
        how.progress.add_total(len(jobs), sum(job.size_in_bytes for job in jobs))
        with UploadChecks(rsm) as checks:
            with how.phases.timing("rewrite"):
                results = _rewritten(jobs, how, checks)
            with how.phases.timing("finalize"):
                for outcome, plan in filter(None, prepared):
                    if plan is not None:
                        _finalize(outcome, plan, results, store, rsm, how, checks)
    except BaseException:
        for _outcome, plan in filter(None, prepared):
            if plan is not None:  # a finalized plan's release changes nothing
                release_plan(store, plan, how.owner)
        raise
    return outcomes


def _rewritten(
    jobs: Sequence[RewriteJob], how: BatchCopy, checks: UploadChecks
) -> dict[str, RewriteResult]:
    """Every job's result, each upload's verification started as soon as it is back: the
    read-back overlaps the rest of the rewrite instead of following it."""
    by_id = {job.segment_id: job for job in jobs}
    results = {}
    for result in how.rewrite(jobs, how.progress):
        results[result.segment_id] = result
        checks.check(by_id[result.segment_id], result)
    return results


def _prepare(
    log_: PartitionLog, store: MetadataStore, rsm: RemoteStorageManager, how: BatchCopy
) -> tuple[CopyOutcome, CopyPlan | None] | None:
    outcome = CopyOutcome(log_.topic, log_.partition)
    try:
        plan = prepare_copy(
            log_,
            store,
            rsm=rsm,
            owner=CopyOwner(how.owner, how.lease_ttl_s, how.holder),
            dry_run=how.dry_run,
        )
    except UnknownTopicError:
        return None
    except Exception as exc:  # this partition alone fails; the batch goes on
        outcome.error = error_line(exc)
        return outcome, None
    outcome.report = plan.report
    return outcome, (None if how.dry_run or plan.report.skipped else plan)


def _finalize(
    outcome: CopyOutcome,
    plan: CopyPlan,
    results: dict[str, RewriteResult],
    store: MetadataStore,
    rsm: RemoteStorageManager,
    how: BatchCopy,
    checks: UploadChecks,
) -> None:
    told = how.on_copied
    try:
        outcome.report = finalize_copy(
            plan,
            results,
            store,
            rsm,
            owner=how.owner,
            clock=wall_clock_ms,
            on_copied=None if told is None else lambda s: told(outcome.topic, outcome.partition, s),
            checks=checks,
        )
    except Exception as exc:
        outcome.error = error_line(exc)
