"""One partition's merge job: build its segments from the WAL and upload them, no state.

Airflow records every segment COPY_SEGMENT_STARTED first (``merge.prepare_merge``), then hands
the job to Spark or runs it in the worker. For each segment, in offset order, the job reads the
batches' byte ranges from the WAL objects (one ranged GET per run, as a fetch does), injects
their offsets, writes the segment's files into a staging directory and uploads them through
the classic copy's ``rewrite_segment`` (chunked, optionally compressed and encrypted). It
returns one ``RewriteResult`` per segment; only Airflow turns results into state.

A partition's segments are built one after the other, not in parallel, because each producer
snapshot continues the previous one's state. The first continues the snapshot of the tiered
segment just before it (``previous``), fetched from remote storage.

The staging directory of a segment is ``<staging root>/<topic>-<topic id>/<partition>/<20-digit
base offset>``: the same inputs always give the same place and the same bytes, so a rerun
simply rebuilds it. It is removed once the upload is done or has failed.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

from tierflow.diskless.coordinates import BatchCoordinate
from tierflow.diskless.merge_segment import ProducerState, SegmentWriter
from tierflow.diskless.wal_reads import read_run, runs
from tierflow.faults import crash_point
from tierflow.kafka.naming import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SNAPSHOT_SUFFIX,
    TIME_INDEX_SUFFIX,
    offset_prefix,
)
from tierflow.lifecycle.copy.rewrite import RewriteJob, RewriteResult, rewrite_segment
from tierflow.rsm import (
    IndexType,
    LogSegmentData,
    RemoteResourceNotFoundError,
    RemoteSegment,
    RemoteStorageManager,
)
from tierflow.storage.object_store import ObjectStore

log = logging.getLogger(__name__)


def partition_staging_dir(root: Path, topic: str, topic_id: str, partition: int) -> Path:
    return root / f"{topic}-{topic_id}" / str(partition)


def staged_files(
    directory: Path, start_offset: int, end_offset: int, *, leader_epoch_index: bytes = b""
) -> LogSegmentData:
    """Where a segment's files are staged (the names a broker gives them)."""
    prefix = offset_prefix(start_offset)
    return LogSegmentData(
        log_segment=directory / (prefix + LOG_SUFFIX),
        offset_index=directory / (prefix + INDEX_SUFFIX),
        time_index=directory / (prefix + TIME_INDEX_SUFFIX),
        transaction_index=None,  # diskless topics take no transactional batches
        producer_snapshot_index=directory / (offset_prefix(end_offset + 1) + SNAPSHOT_SUFFIX),
        leader_epoch_index=leader_epoch_index,
    )


@dataclass(frozen=True)
class MergeSegmentJob:
    """One segment: where and what to upload (the classic copy's job), and its batches."""

    rewrite: RewriteJob
    batches: tuple[BatchCoordinate, ...]

    @property
    def directory(self) -> Path:
        return Path(self.rewrite.log_segment).parent

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
        error = f"{job.topic}-{job.partition}: {_describe(exc)}"
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
    """Stage one segment's files from the WAL and upload them; the staging dir goes after."""
    rewrite = job.rewrite
    try:
        stage_segment(job, objects, producers)
        crash_point("merge.after_staged")
        result = rewrite_segment(rewrite, rsm)
        crash_point("merge.after_upload")
        return result
    except Exception as exc:  # Airflow cleans up and fails the task with this message
        return RewriteResult(
            rewrite.segment_id, error=f"{rewrite.segment.describe()}: {_describe(exc)}"
        )
    finally:
        shutil.rmtree(job.directory, ignore_errors=True)


def stage_segment(job: MergeSegmentJob, objects: ObjectStore, producers: ProducerState) -> None:
    """Write the segment's files where its RewriteJob says they are, from scratch."""
    rewrite = job.rewrite
    shutil.rmtree(job.directory, ignore_errors=True)
    writer = SegmentWriter(job.directory, rewrite.start_offset, producers)
    try:
        for run in runs(list(job.batches)):
            for data in read_run(objects, run):
                writer.append(data, source=run[0].object_key)
    except BaseException:
        writer.abort()
        raise
    staged = writer.close()
    expected = staged_files(job.directory, rewrite.start_offset, rewrite.end_offset)
    if (staged.size_in_bytes, staged.next_offset) != (
        rewrite.size_in_bytes,
        rewrite.end_offset + 1,
    ):
        raise ValueError(
            f"staged {staged.size_in_bytes} bytes up to offset {staged.next_offset - 1}; "
            f"the segment was recorded with {rewrite.size_in_bytes} bytes up to "
            f"{rewrite.end_offset}"
        )
    if staged.producer_snapshot_path != expected.producer_snapshot_index:
        raise ValueError(f"snapshot staged as {staged.producer_snapshot_path}")


def _previous_producers(job: MergeJob, rsm: RemoteStorageManager) -> ProducerState:
    """The producer state the first segment continues: the previous tiered segment's."""
    if job.previous is None:
        return ProducerState()
    try:
        data = rsm.fetch_index(job.previous, IndexType.PRODUCER_SNAPSHOT)
    except RemoteResourceNotFoundError:
        log.warning("%s: no producer snapshot; starting from none", job.previous.describe())
        return ProducerState()
    with tempfile.TemporaryDirectory(prefix="tierflow-snapshot-") as tmp:
        return ProducerState.from_snapshot(data, Path(tmp) / "previous.snapshot")


def _describe(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()
