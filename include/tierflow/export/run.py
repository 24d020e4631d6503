"""One export run of a topic: every partition from where the table's last commit ended, up to
what the tiered data decides, written and committed once.

Exactly once, through a run id (Airflow's run, or the CLI's):
- killed before its commit, the run left files no snapshot references, under its own
  directory of the bucket; the next run (its rerun or a new one) deletes them and writes what
  they held;
- killed after its commit, the rerun finds its run id in the table and does nothing more;
- the next run starts after the highest offset committed, so no offset is written twice and
  none is skipped while the segments are there (retention waits for the export: issue 19).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from pyiceberg.catalog import Catalog

from tierflow.engine.pool import run_jobs
from tierflow.engine.worker import Worker
from tierflow.export.catalog import IcebergTarget, error_line
from tierflow.export.job import PARTITION_EXPORT, ExportJob, exported_range
from tierflow.export.segment_export import ExportedRange
from tierflow.export.table import (
    commit_files,
    committed_ends,
    committed_runs,
    existing_table,
    topic_table,
)
from tierflow.faults import crash_point
from tierflow.ids import safe_name
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.metadata.models import RemoteLogSegment, Topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.segment_refs import remote_segment
from tierflow.storage.local import leftover_keys
from tierflow.storage.object_store import ObjectStore
from tierflow.units import counted


class ExportError(RuntimeError):
    """A partition's export failed: the run commits nothing, and its rerun starts over."""


@dataclass
class ExportReport:
    topic: str
    table: str
    run: str
    committed: bool = False  # this run's commit was made now
    committed_before: bool = False  # by an earlier attempt of the same run
    partitions: list[dict] = field(default_factory=list)

    @property
    def records(self) -> int:
        return sum(p["records"] for p in self.partitions)

    @property
    def json_failures(self) -> int:
        """Values of a value_json topic that did not parse: null in value_json."""
        return sum(p["json_failures"] for p in self.partitions)

    def as_dict(self) -> dict:
        return {**asdict(self), "records": self.records, "json_failures": self.json_failures}

    @classmethod
    def from_dict(cls, raw: dict) -> ExportReport:
        return cls(**{k: v for k, v in raw.items() if k not in ("records", "json_failures")})


@dataclass
class TopicPlan:
    report: ExportReport
    jobs: list[ExportJob]


def export_topic(
    store: MetadataStore,
    worker: Worker,
    target: IcebergTarget,
    topic: Topic,
    *,
    run: str,
    progress: Progress = NO_PROGRESS,
    workers: int | None = None,
) -> ExportReport:
    """Plan, write the Parquet files on the engine's pool (``workers`` processes, or one per
    core for a big enough run, else here), commit: the whole export of one topic (the DAG
    runs the middle step on Spark or in its worker)."""
    plan = plan_topic(store, target, topic, run=run)
    # A job is one partition; the progress counts segments, as advance() below does.
    segments = sum(len(job.segments) for job in plan.jobs)
    progress.add_total(segments, sum(job.size_in_bytes for job in plan.jobs))
    done: dict[int, list[dict]] = {}
    for job, rows in run_jobs(PARTITION_EXPORT, plan.jobs, worker, workers=workers):
        done[job.partition] = rows
        progress.advance(len(job.segments), job.size_in_bytes)
    results = [row for job in plan.jobs for row in done[job.partition]]  # the plan's order
    return commit_topic(store, target.catalog, plan.report, results)


def plan_topic(store: MetadataStore, target: IcebergTarget, topic: Topic, *, run: str) -> TopicPlan:
    """The topic's table (created if missing), cleared of the files of runs that never
    committed, and a job per partition with new tiered records; none when ``run`` committed
    already."""
    value_json = topic.iceberg_value_format == "json"
    table = topic_table(target, kafka_topic_name(topic.name), value_json)
    report = ExportReport(topic.name, ".".join(table.name()), run)
    ends = committed_ends(table)
    store.record_iceberg_export(topic.topic_id, ends)  # after a kill after a commit, too
    committed = committed_runs(table)
    if run in committed:
        report.committed_before = True
        return TopicPlan(report, [])
    data_key = target.warehouse.key(table.location()) + "/data"
    remove_orphans(target.objects, data_key, committed)
    run_key = f"{data_key}/{run_directory(run)}"
    jobs = [
        ExportJob(
            table=report.table,
            run=run,
            partition=rows[0].partition,
            from_offset=start,
            run_key=run_key,
            run_url=target.warehouse.url(run_key),
            segments=[remote_segment(topic, row).identity() for row in rows],
            size_in_bytes=sum(row.segment_size_bytes for row in rows),
            value_json=value_json,
        )
        for rows, start in partitions_to_export(store, topic, ends)
    ]
    return TopicPlan(report, jobs)


def commit_topic(
    store: MetadataStore, catalog: Catalog, report: ExportReport, results: list[dict]
) -> ExportReport:
    """Commit what the topic's jobs wrote, once, and tell the store how far the table goes
    (remote retention waits on it); an ExportError naming the first partition whose job failed
    (nothing is committed then: the rerun writes it all again)."""
    failed = [r for r in results if r["error"]]
    if failed:
        raise ExportError(
            f"{report.topic}-{failed[0]['partition']}: {failed[0]['error']}"
            + (f" (and {counted(len(failed) - 1, 'more partition')})" if len(failed) > 1 else "")
        )
    exported = [exported_range(r) for r in results]
    report.partitions = [_describe(e) for e in exported]
    if report.committed_before:
        return report
    crash_point("export.before_commit")
    try:
        table = catalog.load_table(report.table)
        report.committed = commit_files(table, exported, run=report.run)
    except OSError as exc:  # the catalog went away mid-commit (HTTP client errors are OSErrors)
        raise ExportError(
            f"{report.table}: the commit did not complete: {error_line(exc)}; a rerun of the "
            "same run commits it once"
        ) from None
    crash_point("export.after_commit")
    store.record_iceberg_export(store.topic(report.topic).topic_id, committed_ends(table.refresh()))
    return report


def exported_topics(store: MetadataStore, name: str | None) -> list[Topic]:
    """The named topic, or every topic with tierflow.iceberg.export=true."""
    if name is not None:
        return [store.topic(name)]
    return [t for t in store.topics() if t.iceberg_export]


def dry_run(store: MetadataStore, catalog: Catalog, topics: list[Topic]) -> list[dict]:
    """What an export would read, per partition; nothing is written, no table created."""
    plans = []
    for topic in topics:
        ends = committed_ends(existing_table(catalog, kafka_topic_name(topic.name)))
        for rows, start in partitions_to_export(store, topic, ends):
            plans.append(
                {
                    "topic": topic.name,
                    "partition": rows[0].partition,
                    "from": start,
                    "segments": len(rows),
                    "size_in_bytes": sum(row.segment_size_bytes for row in rows),
                }
            )
    return plans


def partitions_to_export(
    store: MetadataStore, topic: Topic, ends: dict[int, int]
) -> list[tuple[list[RemoteLogSegment], int]]:
    """Per partition with tiered data past its committed end: the finished segments from the
    one holding the next offset, and that offset."""
    work = []
    for partition in store.finished_partitions(topic.topic_id):
        rows = store.segments(topic.topic_id, partition, states=[S.COPY_SEGMENT_FINISHED])
        rows = sorted(rows, key=lambda row: row.start_offset)
        start = max(ends.get(partition, -1) + 1, rows[0].start_offset)
        rows = [row for row in rows if row.end_offset >= start]
        if rows:
            work.append((rows, start))
    return work


def remove_orphans(objects: ObjectStore, data_key: str, committed: set[str]) -> list[str]:
    """Delete the files of runs that never committed (killed before their commit): no
    snapshot references them. Export runs of a topic do not overlap (the DAG runs one at a
    time), so none is being written. The keys deleted."""
    kept = {run_directory(run) for run in committed}
    prefix = f"{data_key}/run-"
    found = [*objects.list(prefix), *leftover_keys(objects, prefix)]
    orphans = [key for key in found if key[len(data_key) + 1 :].split("/")[0] not in kept]
    objects.delete(orphans)
    return orphans


def run_directory(run: str) -> str:
    """A run id (an Airflow run id has colons and pluses) as a directory name."""
    return "run-" + safe_name(run)


def _describe(e: ExportedRange) -> dict:
    return {
        "partition": e.partition,
        "first_offset": e.first_offset,
        "next_offset": e.next_offset,
        "records": e.records,
        "files": len(e.files),
        "size_in_bytes": e.size_in_bytes,
        "json_failures": e.json_failures,
    }
