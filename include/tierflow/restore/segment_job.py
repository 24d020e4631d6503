"""One segment of a restore as plain JSON-able values: what a Spark task (or the worker) needs
to write it back into the partition's staging directory, and nothing of the metadata store.

A heavy restore hands its segments to Spark, one task per segment; a small one writes them in
the process that planned them. Both run ``restore_segment``: it skips a segment whose ``.log``
is already complete in the staging directory, so a retried Spark task or a rerun of the whole
restore writes only what is missing; it checks every object of the segment against the size
and sha256 its copy recorded before it writes anything of it, so a changed object fails the
segment naming its key. Neither writes metadata state nor touches the target: the caller moves
the partition into place once every segment is written (``restore.place``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tierflow.engine.kind import JobKind
from tierflow.engine.worker import Worker
from tierflow.faults import crash_point
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.restore.cut import Cut
from tierflow.restore.segment_files import clear_segment, is_restored, write_segment
from tierflow.rsm import ObjectInfo, RemoteSegment, RemoteStorageManager
from tierflow.units import failure_line


@dataclass(frozen=True)
class RestoreSegmentJob(RemoteSegment):
    """A remote segment (its identity), where it goes and how much of it: a job ending at a
    ``--to-offset`` cut carries the cut; ``objects`` are its objects as the copy recorded them
    (key, size, sha256), checked before it is written."""

    remote_size_in_bytes: int  # the .log as tiered
    size_in_bytes: int  # the .log as restored: up to the cut, if any
    directory: str  # the partition's staging directory
    cut_last_offset: int | None = None
    objects: list[dict] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        segment: RemoteSegment,
        remote_size: int,
        directory: Path,
        cut: Cut | None,
        objects: Sequence[ObjectInfo] = (),
    ) -> RestoreSegmentJob:
        return cls(
            **segment.identity(),
            remote_size_in_bytes=remote_size,
            size_in_bytes=cut.size_in_bytes if cut else remote_size,
            directory=str(directory),
            cut_last_offset=cut.last_offset if cut else None,
            objects=[{"key": o.key, "size": o.size, "sha256": o.sha256} for o in objects],
        )

    @property
    def segment(self) -> RemoteSegment:
        return RemoteSegment(**self.identity())

    @property
    def cut(self) -> Cut | None:
        if self.cut_last_offset is None:
            return None
        return Cut(self.cut_last_offset, self.size_in_bytes)

    @property
    def expected(self) -> list[ObjectInfo]:
        return [ObjectInfo(o["key"], o["size"], o["sha256"]) for o in self.objects]

    def as_dict(self) -> dict:
        return asdict(self)


def restore_segment(job: RestoreSegmentJob, rsm: RemoteStorageManager) -> dict:
    """Check and write one segment unless it is complete; a failure becomes the result's
    ``error``, one line naming the object, so one bad segment does not take a Spark job's
    other segments down with it."""
    directory = Path(job.directory)
    written = False
    try:
        if not is_restored(directory, job.segment, job.size_in_bytes):
            if job.objects:  # a segment recorded before objects were: nothing to check against
                rsm.verify(job.segment, job.expected)
            directory.mkdir(parents=True, exist_ok=True)
            clear_segment(directory, job.segment)
            write_segment(rsm, job.segment, job.remote_size_in_bytes, directory, job.cut)
            written = True
    except Exception as exc:  # reported to the caller, which fails the partition naming it
        return {"segment_id": job.segment_id, "error": failure_line(exc, job.segment.describe())}
    return {"segment_id": job.segment_id, "written": written, "error": None}


def restore_segments_here(
    jobs: Sequence[RestoreSegmentJob],
    rsm: RemoteStorageManager,
    progress: Progress = NO_PROGRESS,
) -> list[dict]:
    """The jobs in order, in this process: for a caller that holds a storage manager rather
    than settings (``restore.request.restore_partition``)."""
    return collect_restored(((job, [restore_segment(job, rsm)]) for job in jobs), progress)


def collect_restored(
    done: Iterable[tuple[RestoreSegmentJob, list[dict]]], progress: Progress = NO_PROGRESS
) -> list[dict]:
    """The result rows of jobs as they come back (here, or from the engine's pool), each
    counted in ``progress``."""
    results: list[dict] = []
    for job, rows in done:
        results += rows
        if any(row.get("written") for row in rows):
            crash_point("restore.after_segment")
        progress.advance(1, job.size_in_bytes)
    return results


def _restore_on(job: RestoreSegmentJob, worker: Worker) -> list[dict]:
    return [restore_segment(job, worker.rsm)]


def _restore_died(job: RestoreSegmentJob, exc: BaseException) -> list[dict]:
    error = f"{job.segment.describe()}: the process restoring it died ({exc})"
    return [{"segment_id": job.segment_id, "error": error}]


def _load_restore(row: dict) -> RestoreSegmentJob:
    return RestoreSegmentJob(**row)


# The restore's jobs on a worker: one segment checked and written per job.
SEGMENT_RESTORE = JobKind(
    "restoring segments", "restore.worker", _load_restore, _restore_on, _restore_died
)
