"""The end of a compaction: new segments FINISHED, the clean section moved, sources deleted.

See ``swap`` for the whole sequence. Every write is fenced by the run's taking of the lease,
and each step is one conditional transition, so a finalize killed anywhere is completed by the
next run's prepare (``clean_up_abandoned`` and ``roll_forward``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from tierflow.faults import crash_point
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.compaction.job import (
    UNCHANGED,
    WRITTEN,
    CompactionGroup,
    CompactionResult,
)
from tierflow.lifecycle.compaction.report import (
    CompactionFailedError,
    CompactionPlan,
    CompactionReport,
)
from tierflow.lifecycle.copy.finalize import object_rows
from tierflow.lifecycle.copy.lease import release_taking
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.errors import InvalidStateTransition, LeaseLostError
from tierflow.metadata.models import Topic
from tierflow.metadata.partition_registry import Lease
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import CompactedSegment, MetadataStore
from tierflow.rsm import RemoteStorageError, RemoteStorageManager

log = logging.getLogger(__name__)


def finalize_compaction(
    plan: CompactionPlan,
    results: Mapping[str, CompactionResult],
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    clock: Clock = wall_clock_ms,
) -> CompactionReport:
    """Settle every group, then delete the sources of those replaced; release the lease.
    Raises CompactionFailedError naming the groups that failed (their sources stay)."""
    job, lease = plan.job, plan.lease
    if plan.dry_run or job is None or lease is None:
        if lease is not None:
            release_taking(store, lease)
        return plan.report
    swap = _Swap(store, rsm, store.topic_by_id(job.topic_id), lease, plan.report, clock)
    try:
        replaced = [g for g in job.groups if swap.settle(g, results.get(g.target.segment_id))]
        if not swap.failures:
            store.record_remote_cleaned(
                job.topic_id, job.partition, job.groups[-1].target.end_offset
            )
        crash_point("compaction.before_replace")
        for group in replaced:
            swap.replace(group)
    finally:
        release_taking(store, lease)
    if swap.failures:
        raise CompactionFailedError("; ".join(swap.failures))
    return plan.report


@dataclass
class _Swap:
    store: MetadataStore
    rsm: RemoteStorageManager
    topic: Topic
    lease: Lease
    report: CompactionReport
    clock: Clock
    failures: list[str] = field(default_factory=list)

    def settle(self, group: CompactionGroup, result: CompactionResult | None) -> bool:
        """FINISHED for a written group's verified segment, else its segment deleted; whether
        the group's sources are to go."""
        target = group.target
        row = self.store.segment(target.segment_id)
        if row.state == S.COPY_SEGMENT_FINISHED:
            return True  # a rerun of a finalize that got this far
        failure = _failure(target.describe(), row.state, result)
        if failure is None and result.outcome == WRITTEN:
            failure = self._finish(group, result)
            if failure is None:
                self._count(group, result.size_in_bytes)
                return True
        self._discard(target.segment_id)
        if failure is not None:
            self.failures.append(failure)
            return False
        if result.outcome == UNCHANGED:
            self.report.unchanged += 1
            return False
        self._count(group, None)  # EMPTY: every record of the group goes
        return True

    def _count(self, group: CompactionGroup, written: int | None) -> None:
        target = group.target
        if written is not None:
            self.report.written.append([target.start_offset, target.end_offset, written])
        self.report.source_bytes += group.source_bytes

    def _finish(self, group: CompactionGroup, result: CompactionResult) -> str | None:
        target = group.target
        try:
            self.rsm.verify(target, result.objects)
            crash_point("compaction.before_finished")
            compacted = CompactedSegment(
                target.segment_id,
                object_rows(result.objects),
                result.size_in_bytes,
                result.max_timestamp_ms,
            )
            self.store.finish_compacted_segment(
                compacted, actor=self.lease.owner, now_ms=self.clock(), lease=self.lease
            )
        except (RemoteStorageError, InvalidStateTransition, LeaseLostError) as exc:
            return f"{target.describe()}: {exc}"
        crash_point("compaction.after_finished")
        return None

    def _discard(self, segment_id: str) -> None:
        """Delete the new segment of a group that is not replacing its sources."""
        self._delete(segment_id, abandoned=True)

    def replace(self, group: CompactionGroup) -> None:
        """Delete the group's sources, now that its new segment (if any) is FINISHED."""
        for source in group.sources:
            if self._delete(source.segment_id, abandoned=False):
                self.report.replaced.append(source.segment_id)

    def _delete(self, segment_id: str, *, abandoned: bool) -> bool:
        row = self.store.segment(segment_id)
        return delete_remote_segment(
            self.store,
            self.rsm,
            self.topic,
            row,
            actor=self.lease.owner,
            now_ms=self.clock(),
            abandoned=abandoned,
            lease=self.lease,
        )


def _failure(what: str, state: str, result: CompactionResult | None) -> str | None:
    if state != S.COPY_SEGMENT_STARTED:
        return f"{what}: is {state}, no longer COPY_SEGMENT_STARTED"
    if result is None:
        return f"{what}: no result from the compaction job"
    return result.error
