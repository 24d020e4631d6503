"""Copy's part of the staged pipeline (``COPY``): what segment_copy does per partition.

Per run (tasks.staged): every partition is prepared (lease, cleanup, COPY_SEGMENT_STARTED)
shard by shard; the segments of all of them are rewritten in one batch (by Spark, or in the
worker below the threshold); then every partition is finalized (verify, COPY_SEGMENT_FINISHED,
release), and the run is summarized with ``copy_totals``. Each step is safe to clear and rerun:
rewriting skips segments that are no longer COPY_SEGMENT_STARTED, and finalizing treats
FINISHED segments as done.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tierflow.cluster.leaders import leader_log, leader_logs
from tierflow.config import Settings, reads_settings
from tierflow.engine.batch_files import Batch, batch_dir, write_batch, write_results
from tierflow.engine.json_lines import read_json_lines
from tierflow.engine.worker import Worker
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.copy.candidates import copy_backlog_bytes
from tierflow.lifecycle.copy.finalize import finalize_copy
from tierflow.lifecycle.copy.plan import UNFINISHED, CopyFailedError, CopyPlan, PartitionCopyReport
from tierflow.lifecycle.copy.prepare import CopyOwner, prepare_copy
from tierflow.lifecycle.copy.rewrite import (
    RewriteJob,
    RewriteResult,
    rewrite_jobs,
    rewrite_results,
)
from tierflow.metadata.models import Partition
from tierflow.metadata.partition_registry import Lease
from tierflow.metadata.states import RemoteLogSegmentState, TieredState
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import open_storage, open_store
from tierflow.storage.handover import connection_client, handed_over
from tierflow.tasks.attribution import attributed
from tierflow.tasks.staged import StagedOperation

log = logging.getLogger(__name__)


@reads_settings
def list_copy_targets(settings: Settings | None = None, params: dict | None = None) -> list[dict]:
    """The leaders' partitions of tiered topics that may have something to copy.

    One query per table for the whole cluster, then per partition a directory listing and the
    root checkpoints: an idle partition costs no task, no lease and no segment read. Partitions
    with an unfinished attempt are included, so prepare cleans it up.
    """
    store = open_store(settings)
    tiered = {
        t.name: t
        for t in store.topics()
        if t.remote_storage_enable
        and t.tiered_state == TieredState.ENABLED
        and t.copied_by_tierflow
    }
    # A partition marked for deletion belongs to remote partition removal, not to copy.
    deleting = {(d.topic_id, d.partition) for d in store.partition_deletes()}
    rows = {(p.topic_id, p.partition): p for p in store.partitions()}
    unfinished = store.partitions_with_segments(UNFINISHED)
    targets = []
    for leader in leader_logs(settings):
        topic = tiered.get(leader.log.topic)
        key = (topic.topic_id, leader.log.partition) if topic else None
        if key is None or key in deleting:
            continue
        backlog = _backlog(leader.log, rows.get(key), topic.config.compacted)
        if backlog or key in unfinished:
            target = {"topic": topic.name, "partition": leader.log.partition}
            targets.append({**target, "broker": leader.broker, "bytes": backlog})
    log.info("%d partitions may have segments to copy", len(targets))
    return targets


def _backlog(log_: PartitionLog, row: Partition | None, compacted: bool) -> int:
    return copy_backlog_bytes(
        log_,
        highest_remote_offset=row.highest_remote_offset if row else -1,
        remote_log_start_offset=row.log_start_offset if row else 0,
        compacted=compacted,
    )


def copy_owner(target: dict) -> str:
    """The lease owner of a partition's copy: the same for every run, try and clear of it."""
    return f"airflow:segment_copy:{target['topic']}-{target['partition']}"


@reads_settings
def prepare_target(
    target: dict, *, lease_ttl_s: int | None = None, settings: Settings | None = None
) -> dict:
    """Plan one partition's copy under its lease, held for ``lease_ttl_s`` (default
    TIERFLOW_COPY_LEASE_TTL_S): how long a killed task's lease blocks other owners."""
    log_ = leader_log(settings, target["topic"], int(target["partition"])).log
    plan = prepare_copy(
        log_,
        open_store(settings),
        rsm=open_storage(settings),
        owner=CopyOwner(copy_owner(target), lease_ttl_s or settings.copy_lease_ttl_s),
        actor=attributed(copy_owner(target)),
    )
    if plan.report.skipped:
        log.info("%s-%d skipped: %s", log_.topic, log_.partition, plan.report.skipped)
    log.info("%s-%d: %d segments to copy", log_.topic, log_.partition, len(plan.jobs))
    return plan_to_dict(plan)


@reads_settings
def plan_rewrite(
    prepared: Sequence[dict | None], *, run_key: str, settings: Settings | None = None
) -> Batch:
    """Write the batch's jobs file and choose Spark or the worker by the threshold."""
    store = open_store(settings)
    jobs = still_started(store, [job for plan in prepared if plan for job in plan_jobs(plan)])
    directory = batch_dir(settings, "rewrite-jobs", run_key)
    batch = write_batch(directory, jobs, settings)
    log.info("%d segments, %d bytes to rewrite: %s", len(jobs), batch.bytes, batch.runs_on)
    return batch


@reads_settings
def rewrite_in_worker(batch: Batch, settings: Settings | None = None) -> dict:
    """The path below the Spark threshold: the same rewrite Spark runs, on every core of the
    worker (engine.pool)."""
    jobs = still_started(open_store(settings), load_jobs(Path(batch.jobs_file)))
    results = rewrite_jobs(jobs, Worker.here(settings))
    return write_results(batch, (result.as_dict() for result in results))


@reads_settings
@contextmanager
def spark_bucket_handover(settings: Settings | None = None) -> Iterator[None]:
    """While spark-submit runs: the bucket's connection, resolved now (fresh temporary
    credentials for every try), in the environment the driver inherits; nothing for a local
    bucket."""
    spec = connection_client(settings)
    if spec is not None:
        log.info("handing the bucket's connection to the Spark driver")
    with handed_over(spec):
        yield


@reads_settings
def finalize_target(
    prepared: dict | None,
    results: Mapping[str, RewriteResult],
    settings: Settings | None = None,
) -> dict | None:
    """Verify and finish one partition's segments, given the batch's ``rewrite_results``;
    None when its prepare did not succeed."""
    if prepared is None:
        return None
    plan = plan_from_dict(prepared)
    target = {"topic": plan.report.topic, "partition": plan.report.partition}
    report = finalize_copy(
        plan,
        results,
        open_store(settings),
        open_storage(settings),
        owner=copy_owner(target),
    )
    return report.as_dict()


def copy_totals(reports: Sequence[dict]) -> dict:
    """Partitions, segments, bytes and abandoned attempts removed, over finalize reports."""
    return {
        "partitions": len(reports),
        "segments": sum(len(r["copied"]) for r in reports),
        "bytes": sum(s["size_in_bytes"] for r in reports for s in r["copied"]),
        "cleaned_up": sum(len(r["cleaned_up"]) for r in reports),
    }


def still_started(store: MetadataStore, jobs: list[RewriteJob]) -> list[RewriteJob]:
    """Only segments still COPY_SEGMENT_STARTED may be uploaded: a cleared, rerun rewrite must
    never write objects for a segment that was since finished or deleted."""
    keep = []
    states = store.segment_states([job.segment_id for job in jobs])
    for job in jobs:
        state = states[job.segment_id]
        if state == RemoteLogSegmentState.COPY_SEGMENT_STARTED:
            keep.append(job)
        else:
            log.info("not rewriting segment %s: it is %s", job.segment_id, state)
    return keep


def load_jobs(path: Path) -> list[RewriteJob]:
    """A batch's jobs file (the Spark driver reads it too, spark_apps/rewrite_segments.py)."""
    return [RewriteJob(**raw) for raw in read_json_lines(path)]


def plan_to_dict(plan: CopyPlan) -> dict:
    return {
        "report": plan.report.as_dict(),
        "jobs": [job.as_dict() for job in plan.jobs],
        "blocked_by": str(plan.blocked_by) if plan.blocked_by else None,
        # finalize (another task) writes under this taking of the lease, and releases it
        "lease": list(plan.lease) if plan.lease else None,
    }


def plan_jobs(raw: dict) -> list[RewriteJob]:
    return [RewriteJob(**job) for job in raw["jobs"]]


def plan_from_dict(raw: dict) -> CopyPlan:
    report = raw["report"]
    return CopyPlan(
        report=PartitionCopyReport(
            report["topic"],
            report["partition"],
            cleaned_up=list(report["cleaned_up"]),
            skipped=report["skipped"],
            held_back=report.get("held_back"),
            waiting=report.get("waiting"),
        ),
        jobs=plan_jobs(raw),
        blocked_by=CopyFailedError(raw["blocked_by"]) if raw.get("blocked_by") else None,
        lease=Lease(*raw["lease"]) if raw.get("lease") else None,
    )


COPY = StagedOperation(
    name="copy",
    targets=list_copy_targets,
    prepare=lambda target, settings, params, run_key: prepare_target(
        target, lease_ttl_s=int(params.get("lease_ttl_s") or 0) or None, settings=settings
    ),
    plan_batch=lambda prepared, run_key, settings: plan_rewrite(
        prepared, run_key=run_key, settings=settings
    ),
    run_in_worker=rewrite_in_worker,
    results=rewrite_results,
    finalize=finalize_target,
    totals=copy_totals,
)
