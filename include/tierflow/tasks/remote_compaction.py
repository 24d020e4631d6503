"""Task bodies of the remote_compaction DAG: prepare per partition, one compaction batch,
finalize per partition; the staged pipeline's shape, each step as safe to clear and rerun:

- prepare (lease, cleanup of killed attempts, roll an interrupted swap forward, choose the
  groups, COPY_SEGMENT_STARTED) per partition;
- every prepared partition's job in one batch, by Spark (``spark_apps/compact_segments.py``:
  the offset map as a shuffle by key) or, below ``TIERFLOW_SPARK_THRESHOLD_BYTES``, in the
  worker by the same code; neither writes state;
- finalize per partition: verify, COPY_SEGMENT_FINISHED, the clean section, then the replaced
  segments deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path

from tierflow.config import Settings
from tierflow.engine.batch_files import (
    Batch,
    batch_dir,
    read_jobs,
    read_rows,
    write_batch,
    write_results,
)
from tierflow.engine.json_lines import read_json_lines, write_json_lines
from tierflow.engine.pool import result_rows
from tierflow.engine.worker import Worker
from tierflow.ids import safe_name
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.compaction.finalize import finalize_compaction
from tierflow.lifecycle.compaction.job import CompactionJob, CompactionResult
from tierflow.lifecycle.compaction.passes import PARTITION_COMPACTION
from tierflow.lifecycle.compaction.report import CompactionOptions, CompactionPlan, CompactionReport
from tierflow.lifecycle.compaction.swap import prepare_compaction
from tierflow.lifecycle.compaction.targets import compaction_targets
from tierflow.metadata.partition_registry import Lease
from tierflow.runtime import open_storage, open_store
from tierflow.tasks.staged import StagedOperation

log = logging.getLogger(__name__)


def list_compaction_targets(settings: Settings, params: dict) -> list[dict]:
    """The partitions with compaction work (see ``compaction.targets``): one target each."""
    store = open_store(settings)
    found = compaction_targets(
        store,
        now_ms=int(params.get("now_ms") or wall_clock_ms()),
        topic=params.get("topic") or None,
        force=bool(params.get("force")),
    )
    log.info("%d compacted partitions with work", len(found))
    return [{"topic": t.name, "topic_id": t.topic_id, "partition": p} for t, p in found]


def compaction_owner(target: dict) -> str:
    """The lease owner of a partition's compaction: the same for every run, try and clear."""
    return f"airflow:remote_compaction:{target['topic']}-{target['partition']}"


def prepare_target(target: dict, settings: Settings, params: dict, run_key: str) -> dict:
    store = open_store(settings)
    options = CompactionOptions(
        now_ms=int(params.get("now_ms") or wall_clock_ms()),
        force=bool(params.get("force")),
        lease_ttl_s=settings.copy_lease_ttl_s,
    )
    plan = prepare_compaction(
        store,
        open_storage(settings),
        target["topic_id"],
        int(target["partition"]),
        options,
        owner=compaction_owner(target),  # stable: the next run takes a killed run's lease over
        dry_run=bool(params.get("dry_run")),
    )
    label = f"{target['topic']}-{target['partition']}"
    job_file = None
    if plan.job is not None:
        job_file = batch_dir(settings, "compaction-jobs", run_key) / f"{safe_name(label)}.json"
        write_json_lines(job_file, [plan.job.as_dict()])
        log.info("%s: %d groups to compact (%s)", label, len(plan.job.groups), plan.report.reason)
    else:
        log.info("%s: %s", label, plan.report.skipped or plan.report.pending)
    return plan_to_dict(plan, job_file)


def plan_compaction(prepared: Sequence[dict | None], run_key: str, settings: Settings) -> Batch:
    """The batch's jobs file (one line per partition), and Spark or the worker."""
    files = [Path(raw["job_file"]) for raw in prepared if raw and raw.get("job_file")]
    jobs = [load_job(path) for path in files]
    groups = sum(len(job.groups) for job in jobs)
    directory = batch_dir(settings, "compaction-jobs", run_key)
    batch = write_batch(directory, jobs, settings)
    log.info(
        "%d groups of %d partitions, %d bytes: %s",
        groups,
        len(jobs),
        batch.bytes,
        batch.runs_on,
    )
    return batch


def compact_in_worker(batch: Batch, settings: Settings) -> dict:
    """The path below the Spark threshold: the partitions' jobs on every core (engine.pool)."""
    jobs = [CompactionJob.from_dict(raw) for raw in read_jobs(batch)]
    return write_results(batch, result_rows(PARTITION_COMPACTION, jobs, Worker.here(settings)))


def finalize_target(
    prepared: dict, results: Mapping[str, CompactionResult], settings: Settings
) -> dict:
    """Verify and finish one partition's compaction, given the batch's ``read_results``."""
    plan = plan_from_dict(prepared)
    report = finalize_compaction(plan, results, open_store(settings), open_storage(settings))
    return report.as_dict()


def compaction_totals(reports: Sequence[dict]) -> dict:
    done = [CompactionReport.from_dict(r) for r in reports]
    return {
        "partitions": len(done),
        "segments": sum(len(r.written) for r in done),
        "bytes": sum(w[2] for r in done for w in r.written),
        "replaced": sum(len(r.replaced) for r in done),
        "reclaimed_bytes": sum(r.reclaimed_bytes for r in done),
        "unchanged": sum(r.unchanged for r in done),
        "pending": [[r.topic, r.partition, *p] for r in done for p in r.pending],
    }


def read_results(batch: Batch) -> dict[str, CompactionResult]:
    return {raw["segment_id"]: CompactionResult.from_dict(raw) for raw in read_rows(batch)}


def load_job(path: Path) -> CompactionJob:
    return CompactionJob.from_dict(next(iter(read_json_lines(path))))


def plan_to_dict(plan: CompactionPlan, job_file: Path | None) -> dict:
    """The plan as XCom carries it: the report, the taking of the lease, the job's path."""
    return {
        "report": plan.report.as_dict(),
        "lease": list(plan.lease) if plan.lease else None,
        "job_file": str(job_file) if job_file else None,
        "dry_run": plan.dry_run,
    }


def plan_from_dict(raw: dict) -> CompactionPlan:
    job_file = raw.get("job_file")
    return CompactionPlan(
        report=CompactionReport.from_dict(raw["report"]),
        job=load_job(Path(job_file)) if job_file else None,
        lease=Lease(*raw["lease"]) if raw.get("lease") else None,
        dry_run=bool(raw.get("dry_run")),
    )


COMPACTION = StagedOperation(
    name="compaction",
    targets=list_compaction_targets,
    prepare=prepare_target,
    plan_batch=plan_compaction,
    run_in_worker=compact_in_worker,
    results=read_results,
    finalize=finalize_target,
    totals=compaction_totals,
)
