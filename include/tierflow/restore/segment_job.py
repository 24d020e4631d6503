"""One segment of a restore as plain JSON-able values: what a Spark task (or the worker) needs
to write it back, and nothing of the metadata store.

A heavy restore hands its segments to Spark, one task per segment; a small one writes them in
the process that planned them. Both run ``restore_segment``, which skips a segment whose
``.log`` is already complete, so a retried Spark task or a rerun of the whole restore writes
only what is missing. Neither writes metadata state: the partition files and the event are
written by the caller once every segment is in place.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from tierflow.config import Settings
from tierflow.faults import crash_point
from tierflow.lifecycle.copy.rewrite_executor import executor_storage
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.restore.cut import Cut
from tierflow.restore.segment_files import is_restored, write_segment
from tierflow.rsm import RemoteSegment, RemoteStorageManager
from tierflow.storage.handover import BucketClient


@dataclass(frozen=True)
class RestoreSegmentJob(RemoteSegment):
    """A remote segment (its identity), where it goes and how much of it: a job ending at a
    ``--to-offset`` cut carries the cut."""

    remote_size_in_bytes: int  # the .log as tiered
    size_in_bytes: int  # the .log as restored: up to the cut, if any
    directory: str
    cut_last_offset: int | None = None

    @classmethod
    def build(
        cls, segment: RemoteSegment, remote_size: int, directory: Path, cut: Cut | None
    ) -> RestoreSegmentJob:
        return cls(
            **segment.identity(),
            remote_size_in_bytes=remote_size,
            size_in_bytes=cut.size_in_bytes if cut else remote_size,
            directory=str(directory),
            cut_last_offset=cut.last_offset if cut else None,
        )

    @property
    def segment(self) -> RemoteSegment:
        return RemoteSegment(**self.identity())

    @property
    def cut(self) -> Cut | None:
        if self.cut_last_offset is None:
            return None
        return Cut(self.cut_last_offset, self.size_in_bytes)

    def as_dict(self) -> dict:
        return asdict(self)


def restore_segment(job: RestoreSegmentJob, rsm: RemoteStorageManager) -> dict:
    """Write one segment unless it is complete; a failure becomes the result's ``error``, so
    one bad segment does not take a Spark job's other segments down with it."""
    directory = Path(job.directory)
    written = False
    try:
        if not is_restored(directory, job.segment, job.size_in_bytes):
            directory.mkdir(parents=True, exist_ok=True)
            write_segment(rsm, job.segment, job.remote_size_in_bytes, directory, job.cut)
            written = True
    except Exception as exc:  # reported to the caller, which fails the restore naming it
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return {"segment_id": job.segment_id, "error": f"{job.segment.describe()}: {detail}"}
    return {"segment_id": job.segment_id, "written": written, "error": None}


def restore_segments_here(
    jobs: Sequence[RestoreSegmentJob],
    rsm: RemoteStorageManager,
    progress: Progress = NO_PROGRESS,
) -> list[dict]:
    """The jobs in order, in this process: the path below the Spark threshold."""
    results = []
    for job in jobs:
        results.append(restore_segment(job, rsm))
        if results[-1].get("written"):
            crash_point("restore.after_segment")
        progress.advance(1, job.size_in_bytes)
    return results


def restore_partition_rows(
    settings: Settings, rows: Iterable[dict], bucket_client: BucketClient | None = None
) -> Iterator[dict]:
    """What a Spark executor runs over the job rows of one Spark partition (one segment)."""
    rsm = executor_storage(settings, bucket_client)
    for row in rows:
        yield restore_segment(RestoreSegmentJob(**row), rsm)
