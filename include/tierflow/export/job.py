"""One partition's export as plain JSON-able values: what a Spark task (or the worker) needs
to write its Parquet files, and nothing of the metadata store or the catalog.

The plan makes one job per partition with new tiered records; Spark runs one task per job
(a partition's segments are read in offset order, the read_committed state spanning them);
the commit, back in Airflow or the CLI, registers what the jobs wrote. A failed job is
reported in its result, not raised, so the other partitions' results still come back.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from tierflow.config import Settings
from tierflow.export.segment_export import ExportedRange, export_partition
from tierflow.lifecycle.copy.rewrite_executor import executor_storage
from tierflow.rsm import RemoteSegment, RemoteStorageManager
from tierflow.storage.s3_handover import S3ClientSpec


@dataclass(frozen=True)
class ExportJob:
    table: str  # the Iceberg table's identifier, e.g. kafka.orders
    run: str
    partition: int
    from_offset: int
    run_dir: str
    segments: list[dict]  # each a RemoteSegment's identity, in offset order
    size_in_bytes: int  # of the segments' .log files
    value_json: bool = False  # tierflow.iceberg.value.format=json

    def as_dict(self) -> dict:
        return asdict(self)


def run_job(job: ExportJob, rsm: RemoteStorageManager) -> dict:
    """The job's ExportedRange as a dict, with its table; or its error."""
    segments = [RemoteSegment(**s) for s in job.segments]
    try:
        exported = export_partition(
            rsm, segments, job.from_offset, Path(job.run_dir), job.value_json
        )
    except Exception as exc:  # reported to the commit, which fails the run naming it
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return {"table": job.table, "partition": job.partition, "error": detail}
    return {"table": job.table, **asdict(exported), "error": None}


def exported_range(result: dict) -> ExportedRange:
    fields = {k: v for k, v in result.items() if k not in ("table", "error")}
    return ExportedRange(**fields)


def run_job_rows(
    settings: Settings, rows: Iterable[dict], s3_client: S3ClientSpec | None = None
) -> Iterator[dict]:
    """What a Spark executor runs over the job rows of one Spark partition."""
    rsm = executor_storage(settings, s3_client)
    for row in rows:
        yield run_job(ExportJob(**row), rsm)
