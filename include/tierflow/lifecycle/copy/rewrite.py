"""Rewriting one segment into remote storage: the part of a copy that holds no metadata.

Airflow marks a batch of segments COPY_SEGMENT_STARTED and hands their ``RewriteJob``s to
Spark (or, for small batches, runs them in the worker). Each job transforms and uploads one
segment and returns a ``RewriteResult`` with what it wrote. Only Airflow turns results into
state transitions, after verifying them: Spark never writes metadata.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from tierflow.engine.batch_files import Batch, read_rows
from tierflow.engine.kind import JobKind
from tierflow.engine.pool import run_jobs
from tierflow.engine.worker import Worker
from tierflow.faults import crash_point
from tierflow.kafka.batch_scan import ScannedFacts
from tierflow.kafka.errors import KafkaFormatError, format_error_fields
from tierflow.lifecycle.copy.segment_scan import SegmentScan
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.rsm import (
    LogSegmentData,
    ObjectInfo,
    RemoteSegment,
    RemoteStorageManager,
)
from tierflow.units import failure_line


@dataclass(frozen=True)
class RewriteJob(RemoteSegment):
    """Everything needed to upload one segment, as plain JSON-able values: the segment's
    identity (the fields of ``RemoteSegment``) and where its files are."""

    size_in_bytes: int
    log_segment: str
    offset_index: str
    time_index: str
    transaction_index: str | None
    producer_snapshot: str
    leader_epoch_index_b64: str
    slice_from: int | None = None

    @property
    def segment(self) -> RemoteSegment:
        """The identity alone: storage managers and their callers compare plain segments."""
        return RemoteSegment(**self.identity())

    @property
    def data(self) -> LogSegmentData:
        return LogSegmentData(
            log_segment=Path(self.log_segment),
            offset_index=Path(self.offset_index),
            time_index=Path(self.time_index),
            transaction_index=Path(self.transaction_index) if self.transaction_index else None,
            producer_snapshot_index=Path(self.producer_snapshot),
            leader_epoch_index=base64.b64decode(self.leader_epoch_index_b64),
            slice_from=self.slice_from,
        )

    @classmethod
    def build(cls, segment: RemoteSegment, data: LogSegmentData, size: int) -> RewriteJob:
        return cls(
            **segment.identity(),
            size_in_bytes=size,
            log_segment=str(data.log_segment),
            offset_index=str(data.offset_index),
            time_index=str(data.time_index),
            transaction_index=str(data.transaction_index) if data.transaction_index else None,
            producer_snapshot=str(data.producer_snapshot_index),
            leader_epoch_index_b64=base64.b64encode(data.leader_epoch_index).decode("ascii"),
            slice_from=data.slice_from,
        )

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RewriteResult:
    segment_id: str
    objects: list[ObjectInfo] = field(default_factory=list)
    error: str | None = None
    # What the batches said, checked in the upload's pass: FINISHED records it.
    scanned: ScannedFacts | None = None
    # The bad input the pass found (a KafkaFormatError's fields): raised again by finalize.
    refused: dict | None = None

    def as_dict(self) -> dict:
        return {
            "segment_id": self.segment_id,
            "objects": [asdict(o) for o in self.objects],
            "error": self.error,
            "scanned": asdict(self.scanned) if self.scanned else None,
            "refused": self.refused,
        }

    @classmethod
    def from_dict(cls, raw: dict) -> RewriteResult:
        objects = [ObjectInfo(o["key"], int(o["size"]), o.get("sha256")) for o in raw["objects"]]
        scanned = ScannedFacts.from_dict(raw["scanned"]) if raw.get("scanned") else None
        return cls(raw["segment_id"], objects, raw.get("error"), scanned, raw.get("refused"))


def rewrite_segment(job: RewriteJob, rsm: RemoteStorageManager) -> RewriteResult:
    """Transform and upload one segment, its batches checked in the same read; failures become
    results, so one bad segment does not take the other segments of a Spark job down with it.
    Finalize verifies what was stored before FINISHED."""
    scan = SegmentScan(job.log_segment, job.start_offset, job.end_offset)
    what = job.segment.describe()
    try:
        objects = rsm.copy_log_segment_data(job.segment, replace(job.data, observer=scan))
    except KafkaFormatError as exc:
        fields = format_error_fields(exc)
        return RewriteResult(job.segment_id, error=failure_line(exc, what), refused=fields)
    except FileNotFoundError as exc:
        return RewriteResult(job.segment_id, error=gone_line(what, exc))
    except Exception as exc:  # reported to Airflow, which cleans up and fails the task
        return RewriteResult(job.segment_id, error=failure_line(exc, what))
    if scan.result is None:  # a storage manager that did not read the .log through the scan
        return RewriteResult(job.segment_id, error=f"{what}: its batches were not checked")
    return RewriteResult(job.segment_id, objects, scanned=scan.result)


# A live broker deleted the segment under the copy (its retention, or a DeleteRecords, moved
# the log start past it): the attempt fails, and the next run copies from there.
SEGMENT_GONE = (
    "is gone: the broker deleted the segment while it was copied (retention or "
    "DeleteRecords); the next run copies from the new log start offset"
)


def gone_line(what: str, exc: FileNotFoundError) -> str:
    return f"{what}: {exc.filename or exc} {SEGMENT_GONE}"


def _load_rewrite(row: dict) -> RewriteJob:
    return RewriteJob(**row)


def _rewrite_on(job: RewriteJob, worker: Worker) -> list[dict]:
    return [rewrite_segment(job, worker.rsm).as_dict()]


def _rewrite_died(job: RewriteJob, exc: BaseException) -> list[dict]:
    error = f"{job.segment.describe()}: the process rewriting it died ({exc})"
    return [RewriteResult(job.segment_id, error=error).as_dict()]


# The copy's jobs on a worker: one segment rewritten and uploaded per job.
SEGMENT_REWRITE = JobKind(
    "rewriting segments", "copy.rewrite_worker", _load_rewrite, _rewrite_on, _rewrite_died
)


def rewrite_jobs(
    jobs: Sequence[RewriteJob],
    worker: Worker,
    *,
    workers: int | None = None,
    progress: Progress = NO_PROGRESS,
) -> Iterator[RewriteResult]:
    """One result per job, in the order they finish, on every core (engine.pool); ``progress``
    hears of each."""
    for job, (row,) in run_jobs(SEGMENT_REWRITE, jobs, worker, workers=workers):
        progress.advance(1, job.size_in_bytes)
        yield RewriteResult.from_dict(row)
        crash_point("copy.after_upload")


def rewrite_results(batch: Batch) -> dict[str, RewriteResult]:
    """The batch's results by segment id; none when the rewrite wrote no file."""
    return {row["segment_id"]: RewriteResult.from_dict(row) for row in read_rows(batch)}
