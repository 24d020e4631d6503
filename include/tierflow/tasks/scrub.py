"""Task bodies of the remote_scrub DAG: check the bucket within a budget, repair what is safe
on the worker of the broker that holds each local copy, and turn the run red while any finding
stays open.

A repair reads a partition's leader replica, so it runs in the lane (Airflow queue) of the
broker leading that partition: each lane's task takes the findings of the partitions its broker
leads, and the default lane also those no configured broker leads (nothing local to copy from:
they are said, and stay open).
"""

from __future__ import annotations

import logging
from dataclasses import asdict

from tierflow.cluster.leaders import LeaderLog, leader_logs
from tierflow.config import Settings, reads_settings
from tierflow.kafka.log_dir import PartitionLog
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.scrub.repair import RepairRun, repair_findings
from tierflow.lifecycle.scrub.run import ScrubRun, scrub
from tierflow.runtime import open_storage, open_store
from tierflow.tasks.attribution import attributed
from tierflow.tasks.shards import DEFAULT_QUEUE

log = logging.getLogger(__name__)

ACTOR = "airflow:remote_scrub"


class OpenFindingsError(RuntimeError):
    """Objects in the bucket are damaged and not repaired (yet): on-call should look."""


@reads_settings
def scrub_bucket(budget_bytes: int | None = None, settings: Settings | None = None) -> dict:
    """One scrub run within ``budget_bytes`` (None: TIERFLOW_SCRUB_BUDGET_BYTES)."""
    assert settings is not None, "given by reads_settings"
    budget = budget_bytes or settings.scrub_budget_bytes
    run = ScrubRun(budget_bytes=budget, actor=attributed(ACTOR), clock_ms=wall_clock_ms)
    report = scrub(open_store(settings), open_storage(settings), run)
    for found in report.findings:
        log.error("scrub: %s", found.said())
    return {
        "segments": len(report.segments),
        "checked_bytes": report.checked_bytes,
        "budget_bytes": budget,
        "findings": len(report.findings),
    }


@reads_settings
def repair_lane(
    lane: str, queues: dict[int, str], *, dry_run: bool, settings: Settings | None = None
) -> list[dict]:
    """The open findings of the partitions whose leader's queue is ``lane``, repaired."""
    assert settings is not None, "given by reads_settings"
    leaders = {(found.log.topic, found.log.partition): found for found in leader_logs(settings)}

    def lane_of(topic: str, partition: int) -> str:
        leader: LeaderLog | None = leaders.get((topic, partition))
        return DEFAULT_QUEUE if leader is None else queues.get(leader.broker, DEFAULT_QUEUE)

    def local_log(topic: str, partition: int) -> PartitionLog | None:
        leader = leaders.get((topic, partition))
        return None if leader is None else leader.log

    run = RepairRun(
        actor=attributed(ACTOR),
        clock_ms=wall_clock_ms,
        local_log=local_log,
        dry_run=dry_run,
        takes=lambda topic, partition: lane_of(topic, partition) == lane,
    )
    repairs = repair_findings(open_store(settings), open_storage(settings), run)
    for repair in repairs:
        log.log(logging.INFO if repair.repairable else logging.WARNING, "%s", repair.line())
    return [asdict(repair) for repair in repairs]


@reads_settings
def check_findings(settings: Settings | None = None) -> int:
    """How many findings are open: none, or OpenFindingsError naming each."""
    assert settings is not None, "given by reads_settings"
    still = open_store(settings).open_findings()
    if still:
        named = "; ".join(f"{f.finding_key}: {f.finding}" for f in still[:20])
        raise OpenFindingsError(f"{len(still)} scrub finding(s) open: {named}")
    return 0
