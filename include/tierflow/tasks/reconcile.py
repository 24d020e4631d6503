"""Task bodies of the remote_reconcile DAG: compare bucket and store, fix what is safe, report.

"Now" is the wall clock, not the run's data interval: orphans are judged by the objects' real
modification times, so a backfill of a past week would mean nothing.

Failing, and when:

* ``reconcile`` raises ReconcileError when an applied fix failed (a storage or store error):
  the failures are logged first, the other fixes are done, and the retry re-plans from scratch
  (every fix is idempotent).
* Data-loss findings (missing-object, size-mismatch) never make ``reconcile`` fail: they are
  logged at ERROR and returned, and ``check_data_loss``, the DAG's last task, raises
  DataLossFoundError so the run is red for on-call. Retrying cannot bring objects back, so the
  DAG turns that into a failure without retries.
"""

from __future__ import annotations

import logging
from typing import Any

from tierflow.config import Settings, reads_settings
from tierflow.kafka.cluster_metadata import read_cluster_topics
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.lifecycle.reconcile import (
    Outcome,
    ReconcileGrace,
    ReconcilePlan,
    ReconcileReport,
    ReconcileScope,
    Result,
    apply_reconcile,
    plan_reconcile,
    reconcile_summary,
)
from tierflow.runtime import open_objects, open_storage, open_store
from tierflow.storage.keys import key_layout
from tierflow.tasks.attribution import attributed

log = logging.getLogger(__name__)

ACTOR = "airflow:remote_reconcile"
# Findings carried in the task's return value (an XCom) and written one per log line; the
# counts always cover all of them.
MAX_REPORTED_FINDINGS = 500


class ReconcileError(RuntimeError):
    """Some fixes failed; the findings stay, and the next run (or the retry) tries again."""


class DataLossFoundError(RuntimeError):
    """FINISHED segments whose objects are missing or have the wrong size."""


def object_grace_ms(settings: Settings, grace_hours: float | None) -> int:
    """The orphan-object grace: the DAG's ``grace_hours``, else TIERFLOW_RECONCILE_GRACE_S."""
    if grace_hours is None:
        return settings.reconcile_grace_s * 1000
    if grace_hours < 0:
        raise ValueError(f"grace_hours must not be negative, got {grace_hours}")
    return round(grace_hours * 3_600_000)


def cluster_topic_ids(settings: Settings) -> set[str] | None:
    """The ids of the cluster's topics (TIERFLOW_KAFKA_BOOTSTRAP), None without one: keys of
    a live topic tierflow does not know may be its brokers', never orphans to delete. An
    unreadable cluster raises ClusterMetadataError: nothing may be concluded then."""
    if not settings.cluster.bootstrap_servers:
        return None
    return {
        i for i in read_cluster_topics(settings.cluster.bootstrap_servers).values() if i is not None
    }


def run_reconcile(
    settings: Settings,
    *,
    apply: bool,
    object_grace_ms: int,
    actor: str,
    topics: list[str] | None = None,
    progress: Progress = NO_PROGRESS,
) -> tuple[ReconcilePlan, ReconcileReport | None]:
    """Plan against the configured bucket and store, and with ``apply`` fix what is safe;
    ``progress`` hears of the planning, the long part (see plan_reconcile)."""
    objects = open_objects(settings)
    store = open_store(settings)
    # pyiceberg and pyarrow (0.7 s) load here, not with every command that imports this.
    from tierflow.export.referenced import settings_warehouse

    warehouse = settings_warehouse(settings)  # the Iceberg catalog, opened if files need it
    try:
        plan = plan_reconcile(
            store,
            objects,
            ReconcileScope(settings.storage.prefix, key_layout(settings.storage.layout), topics),
            ReconcileGrace(wall_clock_ms(), object_grace_ms, settings.stale_copy_grace_s * 1000),
            warehouse=warehouse,
            progress=progress,
            cluster_topic_ids=cluster_topic_ids(settings),
        )
        if not apply:
            return plan, None
        rsm = open_storage(settings)
        report = apply_reconcile(
            plan, store, rsm, objects, actor=actor, now_ms=wall_clock_ms(), warehouse=warehouse
        )
        return plan, report
    finally:
        store.close()


@reads_settings
def reconcile(
    *,
    apply: bool,
    grace_hours: float | None,
    settings: Settings | None = None,
    actor: str | None = None,
) -> dict[str, Any]:
    """Plan (and with ``apply``, fix) the whole bucket; returns reconcile_summary's dict. The
    actor defaults to the DAG's, with the running task instance, so the page can link it."""
    actor = actor or attributed(ACTOR)
    plan, report = run_reconcile(
        settings, apply=apply, object_grace_ms=object_grace_ms(settings, grace_hours), actor=actor
    )
    log_summary(plan, report)
    if report is not None and report.failed:
        lines = "; ".join(f"{o.finding.subject}: {o.detail}" for o in report.failed)
        raise ReconcileError(f"{len(report.failed)} reconcile fix(es) failed: {lines}")
    return reconcile_summary(plan, report, max_findings=MAX_REPORTED_FINDINGS)


def log_summary(plan: ReconcilePlan, report: ReconcileReport | None) -> None:
    """One line per finding (data loss at ERROR), then the totals."""
    outcomes = {id(o.finding): o for o in report.outcomes} if report else {}
    for finding in plan.findings[:MAX_REPORTED_FINDINGS]:
        level = logging.WARNING
        if finding.data_loss:
            level = logging.ERROR
        elif not finding.is_anomaly:
            level = logging.INFO
        log.log(
            level,
            "reconcile %s %s [%s]: %s%s",
            finding.kind,
            finding.where,
            finding.action,
            finding.message,
            _outcome(outcomes.get(id(finding))),
        )
    hidden = len(plan.findings) - MAX_REPORTED_FINDINGS
    if hidden > 0:
        log.warning("reconcile: %d more finding(s) not logged", hidden)
    counts = ", ".join(f"{kind} {n}" for kind, n in plan.counts().items() if n)
    mode = "applied" if report else "dry run"
    log.info(
        "reconcile (%s): %d partition(s), %d object(s) checked; %s",
        mode,
        plan.partitions_checked,
        plan.objects_listed,
        counts or "no findings",
    )
    if report is None and plan.actionable:
        log.info("reconcile: %d finding(s) would be fixed with apply on", len(plan.actionable))
    if report is not None:
        log.info(
            "reconcile: %d fixed, %d already done by others, %d remaining, %d failed",
            len(report.fixed),
            len(report.with_result(Result.ALREADY_DONE)),
            len(report.remaining),
            len(report.failed),
        )


def _outcome(outcome: Outcome | None) -> str:
    if outcome is None:
        return ""
    return f" -> {outcome.result}" + (f" ({outcome.detail})" if outcome.detail else "")


def check_data_loss(summary: dict[str, Any]) -> None:
    """Raise DataLossFoundError when reconcile found missing or wrong-sized objects."""
    lost = summary.get("data_loss", 0)
    if not lost:
        log.info("reconcile: no missing or wrong-sized objects")
        return
    keys = [
        f"{f['key']} (segment {f['segment_id']}, {f['kind']})"
        for f in summary.get("findings", [])
        if f["kind"] in ("missing-object", "size-mismatch")
    ]
    raise DataLossFoundError(
        f"{lost} object(s) of COPY_SEGMENT_FINISHED segments are missing or have the wrong "
        f"size; their metadata is kept so readers fail loudly. Restore them or re-tier the "
        f"offsets: {', '.join(keys)}"
    )
