"""One partition's export as plain JSON-able values: what a Spark task (or the worker) needs
to write its Parquet files, and nothing of the metadata store or the catalog.

The plan makes one job per partition with new tiered records; Spark runs one task per job
(a partition's segments are read in offset order, the read_committed state spanning them);
the commit, back in Airflow or the CLI, registers what the jobs wrote. A failed job is
reported in its result, not raised, so the other partitions' results still come back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tierflow.engine.kind import JobKind
from tierflow.engine.worker import Worker
from tierflow.export.segment_export import ExportedRange, export_partition
from tierflow.export.warehouse import DataFiles
from tierflow.rsm import RemoteSegment, RemoteStorageManager
from tierflow.storage.object_store import ObjectStore
from tierflow.units import failure_line


@dataclass(frozen=True)
class ExportJob:
    table: str  # the Iceberg table's identifier, e.g. kafka.orders
    run: str
    partition: int
    from_offset: int
    run_key: str  # the run's directory of the table's data, as a key of the bucket
    run_url: str  # the same directory as the catalog names it
    segments: list[dict]  # each a RemoteSegment's identity, in offset order
    size_in_bytes: int  # of the segments' .log files
    value_json: bool = False  # tierflow.iceberg.value.format=json

    def as_dict(self) -> dict:
        return asdict(self)


def run_job(job: ExportJob, rsm: RemoteStorageManager, objects: ObjectStore) -> dict:
    """The job's ExportedRange as a dict, with its table; or its error. ``rsm`` reads the
    segments, ``objects`` (the same bucket) takes the Parquet files."""
    segments = [RemoteSegment(**s) for s in job.segments]
    files = DataFiles(objects, job.run_key, job.run_url)
    try:
        exported = export_partition(rsm, segments, job.from_offset, files, job.value_json)
    except Exception as exc:  # reported to the commit, which fails the run naming it
        return {"table": job.table, "partition": job.partition, "error": failure_line(exc)}
    return {"table": job.table, **asdict(exported), "error": None}


def exported_range(result: dict) -> ExportedRange:
    fields = {k: v for k, v in result.items() if k not in ("table", "error")}
    return ExportedRange(**fields)


def _export_on(job: ExportJob, worker: Worker) -> list[dict]:
    return [run_job(job, worker.rsm, worker.objects)]


def _export_died(job: ExportJob, exc: BaseException) -> list[dict]:
    error = f"{job.table} partition {job.partition}: the process exporting it died ({exc})"
    return [{"table": job.table, "partition": job.partition, "error": error}]


def _load_export(row: dict) -> ExportJob:
    return ExportJob(**row)


# The export's jobs on a worker: one partition's Parquet files written per job.
PARTITION_EXPORT = JobKind(
    "exporting partitions", "export.worker", _load_export, _export_on, _export_died
)
