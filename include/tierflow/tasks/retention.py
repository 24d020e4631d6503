"""Task bodies of the retention_expiry DAG: plan and expire one partition as of a given night.

"Now" is always passed in (the run's data interval end), never read from the clock, so that a
backfill evaluates each night as of that night. Local retention runs first: it deletes a local
segment only while its remote copy is COPY_SEGMENT_FINISHED, which remote retention may be
about to delete.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Mapping, Sequence

from tierflow.cluster.leaders import leader_log, leader_logs
from tierflow.config import Settings, reads_settings
from tierflow.kafka.errors import KafkaFormatError
from tierflow.lifecycle.retention.local import execute_local_retention, plan_local_retention
from tierflow.lifecycle.retention.remote import (
    execute_remote_retention,
    plan_partition_retention,
    remote_retention_applies,
)
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import UnknownPartitionError, open_storage, open_store
from tierflow.tasks.attribution import attributed
from tierflow.tasks.shards import ShardOutcome, check_run, cut_shards, run_partitions

log = logging.getLogger(__name__)

ACTOR = "airflow:retention_expiry"


@reads_settings
def list_retention_targets(settings: Settings | None = None) -> list[dict]:
    """Partitions of tiered topics that the store knows, whether or not they are on a disk;
    each with the broker that leads it, when one does (its shard runs there)."""
    targets = retention_targets(open_store(settings))
    brokers = _leading_brokers(settings)
    for target in targets:
        target["broker"] = brokers.get((target["topic"], target["partition"]), 0)
    log.info("%d partitions to check", len(targets))
    return targets


def _leading_brokers(settings: Settings) -> dict[tuple[str, int], int]:
    try:
        return {leader.log.key: leader.broker for leader in leader_logs(settings)}
    except KafkaFormatError as exc:  # no usable log dir: remote retention still runs
        log.warning("no leaders from the log dirs (%s): local retention is skipped", exc)
        return {}


@reads_settings
def plan_retention_shards(
    settings: Settings | None = None, queues: Mapping[int, str] | None = None
) -> list[dict]:
    """Every partition to check, in at most TIERFLOW_MAX_SHARDS shards, each on its broker's
    queue in ``queues`` (local retention deletes from that broker's disks)."""
    targets = list_retention_targets(settings)
    return cut_shards(targets, max_shards=settings.max_shards, queues=queues)


@reads_settings
def expire_shard(
    shard: dict, *, now_ms: int, dry_run: bool, settings: Settings | None = None
) -> ShardOutcome:
    """Expire each partition of the shard; a failure is named and the others go ahead."""
    return run_partitions(
        shard["targets"],
        lambda target: expire_partition(target, now_ms=now_ms, dry_run=dry_run, settings=settings),
        what="retention:",
        shard=shard.get("index"),
    )


def retention_targets(store: MetadataStore) -> list[dict]:
    """The partitions a retention run expires (the operator view previews the same ones)."""
    targets = []
    # A deleted topic's partitions belong to remote partition removal now (one query for all).
    deleting = {(d.topic_id, d.partition) for d in store.partition_deletes()}
    for topic in store.topics():
        if not remote_retention_applies(topic):
            continue
        for partition in store.partitions(topic.topic_id):
            if (topic.topic_id, partition.partition) in deleting:
                continue
            targets.append({"topic": topic.name, "partition": partition.partition})
    return targets


@reads_settings
def expire_partition(
    target: dict, *, now_ms: int, dry_run: bool, settings: Settings | None = None
) -> dict:
    store = open_store(settings)
    topic = store.topic(target["topic"])
    partition = store.partition(topic.topic_id, int(target["partition"]))
    try:
        log_ = leader_log(settings, topic.name, partition.partition).log
    except UnknownPartitionError:
        log_ = None  # remote retention still runs from the store alone
    result: dict = {"topic": topic.name, "partition": partition.partition, "dry_run": dry_run}

    local_plan = plan_local_retention(log_, store, topic, now_ms=now_ms) if log_ else None
    result["local"] = local_plan.as_dict() if local_plan else None
    if local_plan is not None and not dry_run:
        local = execute_local_retention(
            local_plan,
            log_,
            store,
            delete_files=settings.delete_local_segments,
            actor=attributed(ACTOR),
        )
        result["local_report"] = local.as_dict()

    # Planned after local retention, which may have moved the local log start offset.
    remote_plan = plan_partition_retention(
        store,
        topic,
        store.partition(topic.topic_id, partition.partition),
        now_ms=now_ms,
        log_=log_,
        copy_grace_ms=settings.stale_copy_grace_s * 1000,
    )
    result["remote"] = remote_plan.as_dict()
    if not dry_run:
        report = execute_remote_retention(
            remote_plan, store, open_storage(settings), actor=attributed(ACTOR)
        )
        result["remote_report"] = report.as_dict()
    return result


def summarize(results: Sequence[dict | None], *, dry_run: bool) -> dict:
    """Segments and bytes per topic: what this run deleted, or with dry_run what it would.

    Counted from what the run did, not from its plans: a segment that an overlapping run (a
    backfill beside the nightly run) deleted first is that run's, and is counted there.
    """
    per_topic: dict[str, dict[str, int]] = defaultdict(
        lambda: {"remote_segments": 0, "remote_bytes": 0, "local_segments": 0, "local_bytes": 0}
    )
    for result in filter(None, results):
        totals = per_topic[result["topic"]]
        remote, local = _done(result, dry_run=dry_run)
        totals["remote_segments"] += len(remote)
        totals["remote_bytes"] += sum(d["size_bytes"] for d in remote)
        totals["local_segments"] += len(local)
        totals["local_bytes"] += sum(d["size_bytes"] for d in local)
    verb = "would delete" if dry_run else "deleted"
    for topic, totals in sorted(per_topic.items()):
        log.info(
            "%s %s: %d remote segments (%d bytes), %d local segments (%d bytes)",
            topic,
            verb,
            totals["remote_segments"],
            totals["remote_bytes"],
            totals["local_segments"],
            totals["local_bytes"],
        )
    return {"dry_run": dry_run, "topics": dict(per_topic)}


def summarize_shards(
    shards: Sequence[dict], outcomes: Sequence[ShardOutcome | None], *, dry_run: bool
) -> dict:
    """summarize over every shard's results; red, naming them, if any partition failed."""
    results = [r for outcome in filter(None, outcomes) for r in outcome.results]
    summary = summarize(results, dry_run=dry_run)
    check_run(shards, outcomes)
    return summary


def _done(result: dict, *, dry_run: bool) -> tuple[list[dict], list[dict]]:
    """(remote, local) deletions of one partition's result: planned ones for a dry run, else
    the ones its reports say this run carried out (local: whose .log file it removed)."""
    local_plan = result["local"]["deletions"] if result["local"] else []
    if dry_run:
        return result["remote"]["deletions"], local_plan
    removed = set(result.get("local_report", {}).get("segments", []))
    local = [d for d in local_plan if d["base_offset"] in removed]
    return result["remote_report"]["deleted"], local
