"""The partition_restore DAG's tasks and the CLI's Spark path: a restore request from the
trigger form, its segments written on Spark or in the worker, then its partitions finished.

    plan_restore → restore_with_spark | restore_in_worker → finish_restore

The plan checks every target and writes the segments missing from each partition's staging
directory as a batch of jobs; a batch of ``TIERFLOW_SPARK_THRESHOLD_BYTES`` or more goes to
Spark (one task per segment), a smaller one is written in the worker by the same code. Neither
writes metadata state nor touches a target: finish moves each partition whose segments were
all written into place and records it, and leaves each other one as it was. Each step is
resumable: a cleared or killed task is rerun with the same request and writes only what is
missing; a finished restore run again changes and records nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from tierflow.config import Settings, reads_settings
from tierflow.engine.batch_files import Batch, batch_dir, read_rows, write_batch
from tierflow.engine.json_lines import read_json_lines
from tierflow.engine.pool import run_jobs
from tierflow.engine.worker import Worker
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.restore.place import place_partitions
from tierflow.restore.plan import RestoreError
from tierflow.restore.request import RestoreRequest, SegmentWriter, prepare_restore
from tierflow.restore.segment_job import SEGMENT_RESTORE, RestoreSegmentJob, collect_restored
from tierflow.runtime import open_storage, open_store
from tierflow.tasks.attribution import attributed
from tierflow.tasks.batch_operation import BatchOperation
from tierflow.tasks.spark_submit import submit_batch

log = logging.getLogger(__name__)
SPARK_APP = "restore_segments.py"


def request_of(params: dict, *, actor: str, bootstrap: str | None = None) -> RestoreRequest:
    """The trigger form's fields as a request; ``bootstrap``: the live cluster to check the
    restored partitions against (TIERFLOW_KAFKA_BOOTSTRAP)."""
    return RestoreRequest(
        topic=params["topic"],
        to=Path(params["to"]),
        partitions=tuple(int(p) for p in params.get("partitions") or ()),
        to_offset=params.get("to_offset"),
        to_timestamp=params.get("to_timestamp"),
        as_topic=params.get("as_topic") or None,
        bootstrap=bootstrap,
        dry_run=bool(params.get("dry_run", True)),
        actor=actor,
    )


@reads_settings
def plan_restore_batch(params: dict, *, run_key: str, settings: Settings | None = None) -> dict:
    """Check every partition's target and write the batch of segments still missing; a dry
    run only reports. The batch says whether it goes to Spark."""
    request = request_of(params, actor="plan", bootstrap=settings.cluster.bootstrap_servers)
    prepared = prepare_restore(open_store(settings), open_storage(settings), request)
    for p in prepared:
        log.info("%s", p.report.describe(None if request.dry_run else "to restore"))
    planned = {"dry_run": request.dry_run, "partitions": [p.report.as_dict() for p in prepared]}
    if request.dry_run:
        return {**planned, "use_spark": False, "segments": 0}
    jobs = [job for p in prepared for job in p.jobs()]
    batch = write_batch(batch_dir(settings, "restore-jobs", run_key), jobs, settings)
    log.info("%d segments (%d bytes) to write (%s)", len(jobs), batch.bytes, batch.runs_on)
    return {**batch.as_xcom(), **planned, "segments": len(jobs)}


def restore_here(jobs: Sequence[RestoreSegmentJob], settings: Settings) -> list[dict]:
    """The path below the Spark threshold: the segments written on every core of the worker
    (engine.pool)."""
    return restore_on_cores(settings)(jobs, NO_PROGRESS)


def restore_on_cores(settings: Settings, workers: int | None = None) -> SegmentWriter:
    """A writer for ``run_restore`` on the engine's pool: one process per core for a batch of
    at least PARALLEL_MIN_BYTES (or ``workers``), else one segment after another here."""
    worker = Worker.here(settings)

    def write(jobs: Sequence[RestoreSegmentJob], progress: Progress = NO_PROGRESS) -> list[dict]:
        return collect_restored(run_jobs(SEGMENT_RESTORE, jobs, worker, workers=workers), progress)

    return write


@reads_settings
def finish_restore(
    params: dict, batch: dict, *, actor: str, settings: Settings | None = None
) -> dict:
    """Move each partition whose segments the batch wrote into place and record it; fail at
    the end naming the first partition that could not be (its target left as it was)."""
    results = read_rows(Batch.model_validate(batch))
    store, rsm = open_store(settings), open_storage(settings)
    request = request_of(params, actor=actor, bootstrap=settings.cluster.bootstrap_servers)
    prepared = prepare_restore(store, rsm, request)
    reports = place_partitions(store, prepared, results, actor)
    # What the plan found, not what is there now that the batch has run.
    planned = {p["partition"]: p for p in batch["partitions"]}
    reports = [
        replace(
            r,
            already_restored=planned[r.partition]["already_restored"],
            unchanged=planned[r.partition]["unchanged"],
        )
        for r in reports
    ]
    for report in reports:
        log.info("%s", report.describe())
    return {"dry_run": False, "partitions": [r.as_dict() for r in reports]}


RESTORE = BatchOperation(
    plan=plan_restore_batch,
    job=RestoreSegmentJob,
    run_here=restore_here,
    finish=lambda params, batch: finish_restore(
        params, batch, actor=attributed("airflow:partition_restore")
    ),
    refused=(RestoreError,),  # a refused restore stays refused on retry
)


def restore_on_spark(settings: Settings, *, run_key: str) -> SegmentWriter:
    """A writer for ``run_restore`` that submits the segments to Spark as one batch."""

    def write(jobs: Sequence[RestoreSegmentJob], progress: Progress = NO_PROGRESS) -> list[dict]:
        batch = write_batch(batch_dir(settings, "restore-jobs", run_key), jobs, settings)
        submit_batch(SPARK_APP, batch, settings, name="tierflow-restore")
        results = list(read_json_lines(Path(batch.results_file)))
        written = {r["segment_id"] for r in results if not r["error"]}
        progress.advance(
            len(written), sum(j.size_in_bytes for j in jobs if j.segment_id in written)
        )
        return results

    return write
