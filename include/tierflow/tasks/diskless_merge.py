"""Task bodies of the diskless_merge DAG: prepare per partition, one merge job, finalize per
partition. The same shape as segment_copy, and each step is as safe to clear and rerun:

- prepare (lease, cleanup of killed attempts, heal, COPY_SEGMENT_STARTED) runs per partition;
- every prepared partition's segments are built and uploaded in one batch, by Spark
  (``spark_apps/merge_wal_segments.py``, one Spark task per partition) or, below
  ``TIERFLOW_SPARK_THRESHOLD_BYTES``, in the worker by the same code; both skip segments that
  are no longer COPY_SEGMENT_STARTED, so a cleared rerun never uploads a finished or deleted one;
- finalize per partition: verify, COPY_SEGMENT_FINISHED, drop the batches from the WAL.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from tierflow.config import Settings, reads_settings
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.merge import (
    MergeOptions,
    MergePlan,
    MergeReport,
    finalize_merge,
    merge_targets,
    prepare_merge,
)
from tierflow.diskless.merge_job import MergeJob, merge_jobs
from tierflow.diskless.merge_plan import KAFKA_SEGMENT_BYTES
from tierflow.engine.batch_files import Batch, batch_dir, write_batch, write_results
from tierflow.engine.json_lines import read_json_lines, write_json_lines
from tierflow.engine.worker import Worker
from tierflow.ids import safe_name
from tierflow.lifecycle.copy.rewrite import RewriteResult, rewrite_results
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import open_storage, open_store
from tierflow.tasks.attribution import attributed
from tierflow.tasks.segment_copy import plan_from_dict, plan_to_dict
from tierflow.tasks.staged import StagedOperation

log = logging.getLogger(__name__)

DEFAULT_MIN_AGE_MINUTES = 60
DEFAULT_MAX_SEGMENTS = 8  # per partition and run: a backlog is worked off over several runs


@reads_settings
def list_merge_targets(topic: str | None = None, settings: Settings | None = None) -> list[dict]:
    """The partitions of the consolidated diskless topics (or of one): one mapped task each."""
    store = open_store(settings)
    coordinator = DisklessCoordinator.for_store(store)
    topic_id = coordinator.topic_id_of(topic) if topic else None
    targets = [
        {"topic": store.topic_by_id(t).name, "topic_id": t, "partition": p}
        for t, p in merge_targets(coordinator, store, topic_id)
    ]
    log.info("%d diskless partitions to merge", len(targets))
    return targets


def merge_owner(target: dict) -> str:
    """The lease owner of a partition's merge: the same for every run, try and clear of it."""
    return f"airflow:diskless_merge:{target['topic']}-{target['partition']}"


@reads_settings
def prepare_target(
    target: dict,
    *,
    run_key: str,
    min_age_ms: int,
    segment_bytes: int,
    max_segments: int | None,
    dry_run: bool,
    settings: Settings | None = None,
) -> dict:
    store = open_store(settings)
    owner = merge_owner(target)
    plan = prepare_merge(
        DisklessCoordinator.for_store(store),
        store,
        open_storage(settings),
        target["topic_id"],
        int(target["partition"]),
        MergeOptions.from_settings(
            settings, min_age_ms=min_age_ms, segment_bytes=segment_bytes, max_segments=max_segments
        ),
        owner=owner,
        dry_run=dry_run,
        actor=attributed(owner),
    )
    label = f"{target['topic']}-{target['partition']}"
    if plan.report.skipped:
        log.info("%s skipped: %s", label, plan.report.skipped)
    elif dry_run:
        log.info("%s would merge (start, end, bytes): %s", label, plan.report.pending)
    else:
        log.info("%s: %d segments to merge", label, len(plan.copy.jobs))
    # The job lists every batch: it goes to a file, and only its path to XCom.
    job_file = None
    if plan.job is not None:
        job_file = jobs_dir(settings, run_key) / f"{safe_name(label)}.json"
        write_json_lines(job_file, [plan.job.as_dict()])
    return merge_plan_to_dict(plan, job_file)


@reads_settings
def plan_merge(
    prepared: Sequence[dict | None], *, run_key: str, settings: Settings | None = None
) -> Batch:
    """Write the batch's jobs file (one line per partition) and choose Spark or the worker."""
    store = open_store(settings)
    jobs = []
    for raw in prepared:
        job_file = raw.get("job_file") if raw else None
        job = still_started(store, load_jobs(Path(job_file))[0]) if job_file else None
        if job is not None:
            jobs.append(job)
    segments = sum(len(job.segments) for job in jobs)
    batch = write_batch(jobs_dir(settings, run_key), jobs, settings)
    log.info(
        "%d segments of %d partitions, %d bytes of WAL batches to merge: %s",
        segments,
        len(jobs),
        batch.bytes,
        batch.runs_on,
    )
    return batch


@reads_settings
def merge_in_worker(batch: Batch, settings: Settings | None = None) -> dict:
    """The path below the Spark threshold: the same job Spark runs, on every core of the
    worker (engine.pool)."""
    store = open_store(settings)
    started = (still_started(store, job) for job in load_jobs(Path(batch.jobs_file)))
    jobs = [job for job in started if job]
    results = merge_jobs(jobs, Worker.here(settings))
    return write_results(batch, (result.as_dict() for result in results))


@reads_settings
def finalize_target(
    prepared: dict, results: Mapping[str, RewriteResult], settings: Settings | None = None
) -> dict:
    """Verify, finish and drop one prepared partition's segments, given the batch's
    ``rewrite_results`` (staged.finalize_shard calls it for the partitions whose prepare
    succeeded)."""
    plan = merge_plan_from_dict(prepared)
    store = open_store(settings)
    target = {"topic": plan.report.topic, "partition": plan.report.partition}
    report = finalize_merge(
        plan,
        results,
        DisklessCoordinator.for_store(store),
        store,
        open_storage(settings),
        owner=merge_owner(target),
        delete_grace_ms=settings.diskless.delete_grace_ms,
    )
    return report.as_dict()


def merge_totals(reports: Sequence[dict]) -> dict:
    """Partitions, segments, bytes, batches dropped and objects emptied, over the reports."""
    done = [MergeReport.from_dict(r) for r in reports]
    return {
        "partitions": len(done),
        "segments": sum(len(r.merged) for r in done),
        "bytes": sum(s.size_in_bytes for r in done for s in r.merged),
        "batches_dropped": sum(r.dropped_batches + r.healed_batches for r in done),
        "objects_emptied": sum(len(r.objects_emptied) for r in done),
        "cleaned_up": sum(len(r.cleaned_up) for r in done),
        "pending": [[r.topic, r.partition, *p] for r in done for p in r.pending],
    }


def still_started(store: MetadataStore, job: MergeJob) -> MergeJob | None:
    """Only segments still COPY_SEGMENT_STARTED may be built and uploaded. Leading segments
    that are already FINISHED (a cleared rerun after finalize got that far) are skipped, and
    the next one continues their producer snapshot; a deleted one ends the job (finalizing
    discarded it and every segment after it)."""
    kept = []
    previous = job.previous
    states = store.segment_states([segment.rewrite.segment_id for segment in job.segments])
    for segment in job.segments:
        state = states[segment.rewrite.segment_id]
        if state == S.COPY_SEGMENT_STARTED:
            kept.append(segment)
            continue
        log.info("not merging segment %s: it is %s", segment.rewrite.segment_id, state)
        if state == S.COPY_SEGMENT_FINISHED and not kept:
            previous = segment.rewrite.segment
            continue
        break
    return replace(job, segments=tuple(kept), previous=previous) if kept else None


def load_jobs(path: Path) -> list[MergeJob]:
    return [MergeJob.from_dict(raw) for raw in read_json_lines(path)]


def jobs_dir(settings: Settings, run_key: str) -> Path:
    return batch_dir(settings, "merge-jobs", run_key)


def merge_plan_to_dict(plan: MergePlan, job_file: Path | None) -> dict:
    """The plan as XCom carries it: the copy plan finalize needs, the path of the job."""
    return {
        "report": plan.report.as_dict(),
        "copy": plan_to_dict(plan.copy),  # with its lease: finalize writes under that taking
        "job_file": str(job_file) if job_file else None,
        "dry_run": plan.dry_run,
    }


def merge_plan_from_dict(raw: dict) -> MergePlan:
    """The plan finalize works from (the job itself stays in its file)."""
    return MergePlan(
        report=MergeReport.from_dict(raw["report"]),
        copy=plan_from_dict(raw["copy"]),
        dry_run=bool(raw.get("dry_run")),
    )


def _prepare(target: dict, settings: Settings, params: dict, run_key: str) -> dict:
    return prepare_target(
        target,
        run_key=run_key,
        min_age_ms=int(params.get("min_age_minutes", DEFAULT_MIN_AGE_MINUTES)) * 60_000,
        segment_bytes=int(params.get("segment_bytes") or KAFKA_SEGMENT_BYTES),
        max_segments=int(params.get("max_segments_per_partition", DEFAULT_MAX_SEGMENTS)) or None,
        dry_run=bool(params.get("dry_run")),
        settings=settings,
    )


MERGE = StagedOperation(
    name="merge",
    targets=lambda settings, params: list_merge_targets(params.get("topic") or None, settings),
    prepare=_prepare,
    plan_batch=lambda prepared, run_key, settings: plan_merge(
        prepared, run_key=run_key, settings=settings
    ),
    run_in_worker=merge_in_worker,
    results=rewrite_results,
    finalize=finalize_target,
    totals=merge_totals,
)
