"""Step 3 of a partition's copy (steps.py): verify every uploaded object (size, sha256,
manifest), record COPY_SEGMENT_FINISHED in ascending offset order, which also advances the
highest remote offset in the same transaction, and release the lease. A segment that failed or
did not verify is deleted through Kafka's delete states, with every segment after it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from tierflow.faults import crash_point
from tierflow.kafka.errors import format_error_of
from tierflow.lifecycle.clock import Clock, wall_clock_ms
from tierflow.lifecycle.copy.lease import release_taking
from tierflow.lifecycle.copy.plan import (
    UNFINISHED,
    CopiedSegment,
    CopyFailedError,
    CopyPlan,
    PartitionCopyReport,
)
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult
from tierflow.lifecycle.remote_delete import delete_remote_segment
from tierflow.metadata.errors import InvalidStateTransition, LeaseLostError
from tierflow.metadata.models import Topic
from tierflow.metadata.partition_registry import Lease
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore, SegmentTransition
from tierflow.rsm import ObjectInfo, RemoteStorageError, RemoteStorageManager

log = logging.getLogger(__name__)


# Read-backs verified side by side (UploadChecks): storage round trips overlap (S3) and sha256,
# which lets go of the GIL, runs on every core (a local bucket).
VERIFY_THREADS = 8


def finalize_copy(
    plan: CopyPlan,
    results: Mapping[str, RewriteResult],
    store: MetadataStore,
    rsm: RemoteStorageManager,
    *,
    owner: str,
    clock: Clock = wall_clock_ms,
    on_copied: Callable[[CopiedSegment], None] | None = None,
    checks: UploadChecks | None = None,
) -> PartitionCopyReport:
    """Verify each result and record COPY_SEGMENT_FINISHED in offset order; ``checks``: the
    uploads already being verified as they came back (a CLI run), else they are verified here.

    Segments become FINISHED strictly in ascending order, as Kafka copies them: after the first
    one that failed or did not verify, the rest are deleted too (their offsets would leave a
    gap) and CopyFailedError names what went wrong, so the task fails and its retry resumes.
    A segment that failed its checks in prepare_copy is raised last, after the ones before it
    are FINISHED.
    """
    report = plan.report
    if not plan.jobs:
        release_plan(store, plan, owner)
        if plan.blocked_by is not None:
            raise plan.blocked_by
        return report
    topic = store.topic(report.topic)
    failed: tuple[RewriteJob, str] | None = None
    verdicts = _verdicts(plan.jobs, results, rsm, checks)
    try:
        for job in plan.jobs:
            row = store.segment(job.segment_id)
            if failed is None and row.state == RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
                _record_copied(report, job, on_copied)  # a rerun of a finalize that got here
                continue
            failure = failed[1] if failed else _not_finished(job, row.state, verdicts)
            if failure is None:
                failure = _finish(job, results[job.segment_id], store, owner, plan.lease, clock)
            if failure is not None:
                failed = failed or (job, failure)
                _discard(store, rsm, topic, job, owner, clock)
                continue
            _record_copied(report, job, on_copied)
            log.info("copied %s-%d offsets %d-%d (%d bytes) as segment %s", *_said(job))
    finally:
        release_plan(store, plan, owner)
    if failed is not None:
        raise _failure_of(*failed, results)
    if plan.blocked_by is not None:
        raise plan.blocked_by
    return report


def _not_finished(job: RewriteJob, state: str, verdicts: Mapping[str, str | None]) -> str | None:
    """Why the job cannot be FINISHED: its row moved on, or its upload did not verify."""
    if state != RemoteLogSegmentState.COPY_SEGMENT_STARTED:
        return _no_longer_copied(job, state)
    return verdicts[job.segment_id]


def _said(job: RewriteJob) -> tuple:
    return (
        job.topic,
        job.partition,
        job.start_offset,
        job.end_offset,
        job.size_in_bytes,
        job.segment_id,
    )


def _failure_of(job: RewriteJob, failure: str, results: Mapping[str, RewriteResult]) -> Exception:
    """What finalize raises for the first segment that failed: its bad input, as the scan
    found it (the file and byte named, of its own class), or CopyFailedError."""
    result = results.get(job.segment_id)
    if result is not None and result.refused is not None and failure == result.error:
        return format_error_of(result.refused)
    return CopyFailedError(failure)


def _finish(
    job: RewriteJob,
    result: RewriteResult,
    store: MetadataStore,
    owner: str,
    lease: Lease | None,
    clock: Clock,
) -> str | None:
    """Record COPY_SEGMENT_FINISHED with the verified objects; why not, if it was too late."""
    crash_point("copy.before_finished")
    try:
        finished = SegmentTransition(
            job.segment_id,
            RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
            objects=object_rows(result.objects),
            scanned=result.scanned,
        )
        store.transition_segment(finished, actor=owner, now_ms=clock(), lease=lease)
    except (InvalidStateTransition, LeaseLostError):
        return _no_longer_copied(job, store.segment(job.segment_id).state)
    crash_point("copy.after_finished")
    return None


def _no_longer_copied(job: RewriteJob, state: str) -> str:
    """A run of the same owner (a later or overlapping run of the DAG) took the partition's
    lease over: it removes this attempt as abandoned and copies those offsets itself."""
    return (
        f"{job.segment.describe()}: is {state}, no longer being copied (another copy of the "
        "partition took its lease over)"
    )


def _discard(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    topic: Topic,
    job: RewriteJob,
    owner: str,
    clock: Clock,
) -> None:
    """Remove an attempt that will not finish, objects included.

    Its segment id belongs to this attempt alone, so whatever is stored under it may go, even
    when another copy already recorded it deleted: this attempt's rewrite may have uploaded
    after that copy deleted the objects.
    """
    row = store.segment(job.segment_id)
    if row.state in UNFINISHED:
        delete_remote_segment(store, rsm, topic, row, actor=owner, now_ms=clock())
    elif row.state == RemoteLogSegmentState.DELETE_SEGMENT_FINISHED:
        rsm.delete_log_segment_data(job.segment)


def _record_copied(
    report: PartitionCopyReport,
    job: RewriteJob,
    on_copied: Callable[[CopiedSegment], None] | None,
) -> None:
    copied = CopiedSegment(job.segment_id, job.start_offset, job.end_offset, job.size_in_bytes)
    report.copied.append(copied)
    if on_copied:
        on_copied(copied)


class UploadChecks:
    """Each upload read back and verified in threads (mostly waiting on reads and sha256,
    which let go of the GIL): as soon as its result comes back, while the rewrite goes on, or
    all at once in finalize. FINISHED still follows in offset order."""

    def __init__(self, rsm: RemoteStorageManager) -> None:
        self._rsm = rsm
        self._pool = ThreadPoolExecutor(VERIFY_THREADS, thread_name_prefix="verify")
        self._pending: dict[str, Future[str | None]] = {}

    def __enter__(self) -> UploadChecks:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._pool.shutdown(cancel_futures=True)

    def check(self, job: RewriteJob, result: RewriteResult | None) -> None:
        """Start verifying ``result``'s upload now."""
        self._pending[job.segment_id] = self._pool.submit(_verify_result, job, result, self._rsm)

    def verdicts(
        self, jobs: Sequence[RewriteJob], results: Mapping[str, RewriteResult]
    ) -> dict[str, str | None]:
        """Every job's verdict: None when its upload verified, else why not."""
        for job in jobs:
            if job.segment_id not in self._pending:
                self.check(job, results.get(job.segment_id))
        return {job.segment_id: self._pending.pop(job.segment_id).result() for job in jobs}


def _verdicts(
    jobs: Sequence[RewriteJob],
    results: Mapping[str, RewriteResult],
    rsm: RemoteStorageManager,
    checks: UploadChecks | None,
) -> dict[str, str | None]:
    if checks is not None:
        return checks.verdicts(jobs, results)
    with UploadChecks(rsm) as own:
        return own.verdicts(jobs, results)


def _verify_result(
    job: RewriteJob, result: RewriteResult | None, rsm: RemoteStorageManager
) -> str | None:
    if result is None:
        return f"{job.segment.describe()}: no result from the rewrite job"
    if result.error:
        return result.error
    try:
        rsm.verify(job.segment, result.objects)
    except RemoteStorageError as exc:
        return f"{job.segment.describe()}: {exc}"
    return None


def release_plan(store: MetadataStore, plan: CopyPlan, owner: str) -> None:
    if plan.report.skipped:
        return
    if plan.lease is not None:
        release_taking(store, plan.lease)
        return
    topic = store.topic(plan.report.topic)  # a plan from before leases had tokens
    store.release_lease(topic.topic_id, plan.report.partition, owner)


def object_rows(objects: Sequence[ObjectInfo]) -> list[tuple[str, str, int, str | None]]:
    """A segment's uploaded objects as COPY_SEGMENT_FINISHED stores them: (kind, key, size,
    sha256), the kind being the key's suffix."""
    return [(o.key.rsplit(".", 1)[-1], o.key, o.size, o.sha256) for o in objects]
