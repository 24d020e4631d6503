"""The iceberg_export DAG's tasks: plan a run's jobs, write them on Spark or in the worker,
commit each topic's files once.

    plan_export → export_with_spark | export_in_worker → commit_export

The plan creates each exported topic's table if missing, deletes what runs that never
committed left, and writes one job per partition with new tiered records; a batch of
``TIERFLOW_SPARK_THRESHOLD_BYTES`` or more goes to Spark (one task per partition), a smaller
one runs in the worker, with the same code. Neither writes metadata state or commits. The run
id is Airflow's: a cleared or killed run is rerun with the same id and commits once.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Sequence

from tierflow.config import Settings, reads_settings
from tierflow.engine.batch_files import Batch, batch_dir, read_rows, write_batch
from tierflow.engine.pool import result_rows
from tierflow.engine.worker import Worker
from tierflow.export.catalog import settings_catalog, settings_target
from tierflow.export.job import PARTITION_EXPORT, ExportJob
from tierflow.export.run import (
    ExportReport,
    commit_topic,
    dry_run,
    exported_topics,
    plan_topic,
)
from tierflow.export.table import existing_table, expire_snapshots
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.runtime import open_objects, open_store
from tierflow.tasks.batch_operation import BatchOperation

log = logging.getLogger(__name__)


@reads_settings
def plan_export_batch(params: dict, *, run_key: str, settings: Settings | None = None) -> dict:
    """The run's jobs as a batch (or, on a dry run, what it would read)."""
    store, target = open_store(settings), settings_target(settings, open_objects(settings))
    topics = exported_topics(store, params.get("topic") or None)
    if params.get("dry_run"):
        plans = dry_run(store, target.catalog, topics)
        for p in plans:
            where = f"{p['topic']}-{p['partition']}"
            log.info("dry run: would export %s from offset %d", where, p["from"])
        return {"dry_run": True, "use_spark": False, "partitions": plans}
    plans = [plan_topic(store, target, topic, run=run_key) for topic in topics]
    jobs = [job for plan in plans for job in plan.jobs]
    batch = write_batch(batch_dir(settings, "export-jobs", run_key), jobs, settings)
    log.info("%d partitions (%d bytes) to export (%s)", len(jobs), batch.bytes, batch.runs_on)
    reports = [plan.report.as_dict() for plan in plans]
    return {**batch.as_xcom(), "dry_run": False, "reports": reports}


def export_here(jobs: Sequence[ExportJob], settings: Settings) -> Iterator[dict]:
    """The path below the Spark threshold: each job's Parquet files, written on every core of
    the worker (engine.pool)."""
    return result_rows(PARTITION_EXPORT, jobs, Worker.here(settings))


@reads_settings
def commit_export(batch: dict, settings: Settings | None = None) -> dict:
    """Commit each topic's results once; ExportError names a partition that failed."""
    store, catalog = open_store(settings), settings_catalog(settings)
    by_table: dict[str, list[dict]] = defaultdict(list)
    for result in read_rows(Batch.model_validate(batch)):
        by_table[result["table"]].append(result)
    reports = []
    for raw in batch["reports"]:
        report = ExportReport.from_dict(raw)
        reports.append(commit_topic(store, catalog, report, by_table[report.table]).as_dict())
        log.info("%s: %d records committed to %s", report.topic, report.records, report.table)
    return {"topics": reports}


EXPORT = BatchOperation(
    plan=plan_export_batch,
    job=ExportJob,
    run_here=export_here,
    finish=lambda _params, batch: commit_export(batch),  # the plan made the batch of them
)


@reads_settings
def expire_iceberg_snapshots(
    now_ms: int, *, dry_run: bool, settings: Settings | None = None
) -> dict[str, int]:
    """The nightly expiry of each exported topic's old snapshots (retention_expiry's run)."""
    topics = exported_topics(open_store(settings), None)
    if not topics:
        return {}  # no catalog opened (nor created) where nothing is exported
    catalog, expired = settings_catalog(settings), {}
    for topic in topics:
        table = existing_table(catalog, kafka_topic_name(topic.name))
        if table is not None and not dry_run:
            expired[topic.name] = expire_snapshots(table, now_ms)
            log.info("%s: %d old snapshots expired", table.name(), expired[topic.name])
    return expired
