"""One partition's merge job: build its segments from the WAL and upload them, no state.

Airflow records every segment COPY_SEGMENT_STARTED first (``merge.prepare_merge``), then hands
the job to Spark or runs it in the worker. For each segment, in offset order, the job reads the
batches' byte ranges from the WAL objects (one ranged GET per run, as a fetch does), injects
their offsets and streams them into the storage manager's upload (chunked, optionally
compressed and encrypted, as the classic copy uploads), while ``SegmentBuilder`` builds the
indexes and the producer snapshot that go up once the last batch has passed. Each byte is
written once, to the bucket: nothing is staged on local disk. The job returns one
``RewriteResult`` per segment; only Airflow turns results into state.

A partition's segments are built one after the other, not in parallel, because each producer
snapshot continues the previous one's state. The first continues the snapshot of the tiered
segment just before it (``previous``), fetched from remote storage.

The same inputs always give the same bytes, so a rerun simply builds the segment again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from tierflow.diskless.coordinates import BatchCoordinate
from tierflow.diskless.merge_segment import ProducerState, SegmentBuilder
from tierflow.diskless.wal_reads import read_run, runs
from tierflow.engine.kind import JobKind
from tierflow.engine.pool import run_jobs
from tierflow.engine.worker import Worker
from tierflow.faults import crash_point
from tierflow.kafka.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    offset_prefix,
)
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult
from tierflow.rsm import (
    IndexType,
    LogSegmentData,
    LogSegmentStream,
    RemoteResourceNotFoundError,
    RemoteSegment,
    RemoteStorageManager,
    SegmentFiles,
)
from tierflow.storage.object_store import ObjectStore
from tierflow.units import failure_line

log = logging.getLogger(__name__)


def segment_file_names(
    start_offset: int, end_offset: int, *, leader_epoch_index: bytes = b""
) -> LogSegmentData:
    """The names a broker would give the segment's files. Nothing is written under them: they
    name the segment in the copy's plan and progress, and the bytes are built as they go up."""
    prefix = offset_prefix(start_offset)
    return LogSegmentData(
        log_segment=Path(prefix + LOG_SUFFIX),
        offset_index=Path(prefix + INDEX_SUFFIX),
        time_index=Path(prefix + TIME_INDEX_SUFFIX),
        transaction_index=None,  # diskless topics take no transactional batches
        producer_snapshot_index=Path(offset_prefix(end_offset + 1) + SNAPSHOT_SUFFIX),
        leader_epoch_index=leader_epoch_index,
    )


@dataclass(frozen=True)
class MergeSegmentJob:
    """One segment: where and what to upload (the classic copy's job), and its batches."""

    rewrite: RewriteJob
    batches: tuple[BatchCoordinate, ...]

    def as_dict(self) -> dict:
        return {"rewrite": self.rewrite.as_dict(), "batches": [asdict(b) for b in self.batches]}

    @classmethod
    def from_dict(cls, raw: dict) -> MergeSegmentJob:
        batches = tuple(BatchCoordinate(**b) for b in raw["batches"])
        return cls(RewriteJob(**raw["rewrite"]), batches)


@dataclass(frozen=True)
class MergeJob:
    """A partition's segments in offset order, and the tiered segment they continue."""

    topic: str
    topic_id: str
    partition: int
    segments: tuple[MergeSegmentJob, ...]
    previous: RemoteSegment | None = None

    @property
    def size_in_bytes(self) -> int:
        return sum(s.rewrite.size_in_bytes for s in self.segments)

    def as_dict(self) -> dict:
        return {
            "topic": self.topic,
            "topic_id": self.topic_id,
            "partition": self.partition,
            "segments": [s.as_dict() for s in self.segments],
            "previous": asdict(self.previous) if self.previous else None,
        }

    @classmethod
    def from_dict(cls, raw: dict) -> MergeJob:
        previous = raw.get("previous")
        return cls(
            topic=raw["topic"],
            topic_id=raw["topic_id"],
            partition=int(raw["partition"]),
            segments=tuple(MergeSegmentJob.from_dict(s) for s in raw["segments"]),
            previous=RemoteSegment(**previous) if previous else None,
        )


def run_merge_job(
    job: MergeJob, objects: ObjectStore, rsm: RemoteStorageManager
) -> list[RewriteResult]:
    """Build and upload each segment in turn; stop at the first failure (finalizing discards
    every segment after a failed one anyway: offsets must not leave a gap)."""
    results: list[RewriteResult] = []
    try:
        producers = _previous_producers(job, rsm)
    except Exception as exc:  # reported per segment, like every other failure here
        error = failure_line(exc, f"{job.topic}-{job.partition}")
        return [RewriteResult(s.rewrite.segment_id, error=error) for s in job.segments[:1]]
    for segment in job.segments:
        result = merge_segment(segment, objects, rsm, producers)
        results.append(result)
        if result.error:
            break
    return results


def merge_segment(
    job: MergeSegmentJob,
    objects: ObjectStore,
    rsm: RemoteStorageManager,
    producers: ProducerState,
) -> RewriteResult:
    """Build one segment from the WAL while it is uploaded."""
    rewrite = job.rewrite
    try:
        written = rsm.copy_log_segment_stream(
            rewrite.segment, segment_stream(job, objects, producers)
        )
        crash_point("merge.after_upload")
        return RewriteResult(rewrite.segment_id, written)
    except Exception as exc:  # Airflow cleans up and fails the task with this message
        return RewriteResult(
            rewrite.segment_id, error=failure_line(exc, rewrite.segment.describe())
        )


def segment_stream(
    job: MergeSegmentJob, objects: ObjectStore, producers: ProducerState
) -> LogSegmentStream:
    """The segment's batches as the upload reads them, then its other files, checked against
    what was recorded STARTED before anything names them in the bucket's manifest."""
    rewrite = job.rewrite
    builder = SegmentBuilder(rewrite.start_offset, producers)

    def batches() -> Iterator[bytes]:
        for run in runs(list(job.batches)):
            for data in read_run(objects, run):
                builder.append(data, source=run[0].object_key)
                yield data
            crash_point("merge.after_run")

    def files() -> SegmentFiles:
        built = (builder.size_in_bytes, builder.next_offset)
        if built != (rewrite.size_in_bytes, rewrite.end_offset + 1):
            raise ValueError(
                f"built {built[0]} bytes up to offset {built[1] - 1}; the segment was recorded "
                f"with {rewrite.size_in_bytes} bytes up to {rewrite.end_offset}"
            )
        return builder.roll(rewrite.data.leader_epoch_index)

    return LogSegmentStream(batches(), files)


def _previous_producers(job: MergeJob, rsm: RemoteStorageManager) -> ProducerState:
    """The producer state the first segment continues: the previous tiered segment's."""
    if job.previous is None:
        return ProducerState()
    try:
        data = rsm.fetch_index(job.previous, IndexType.PRODUCER_SNAPSHOT)
    except RemoteResourceNotFoundError:
        log.warning("%s: no producer snapshot; starting from none", job.previous.describe())
        return ProducerState()
    return ProducerState.from_snapshot(data, f"{job.previous.describe()} producer snapshot")


def _merge_on(job: MergeJob, worker: Worker) -> list[dict]:
    return [r.as_dict() for r in run_merge_job(job, worker.objects, worker.rsm)]


def _merge_died(job: MergeJob, exc: BaseException) -> list[dict]:
    first = job.segments[0].rewrite  # finalize discards every segment after a failed one
    error = f"{first.segment.describe()}: the process merging it died ({exc})"
    return [RewriteResult(first.segment_id, error=error).as_dict()]


# The merge's jobs on a worker: one partition's segments built from the WAL per job, in order
# (each producer snapshot continues the previous one).
WAL_MERGE = JobKind(
    "merging partitions", "merge.worker", MergeJob.from_dict, _merge_on, _merge_died
)


def merge_jobs(
    jobs: Sequence[MergeJob],
    worker: Worker,
    *,
    workers: int | None = None,
) -> Iterator[RewriteResult]:
    """Every segment's result, partition by partition in the order they finish, on every core
    (engine.pool)."""
    for _job, rows in run_jobs(WAL_MERGE, jobs, worker, workers=workers):
        yield from (RewriteResult.from_dict(row) for row in rows)
