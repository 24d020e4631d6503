"""Task bodies of the remote_partition_removal DAG: find deleted topics, remove their data.

Kafka's RemotePartitionRemover (KIP-405) runs every ``remote.partition.remover.task.interval.ms``
(an hour); so does this DAG. Detection marks; removal carries each marked partition through
DELETE_PARTITION_STARTED to DELETE_PARTITION_FINISHED, one mapped task per partition, and a
failed or killed partition is simply picked up again by the next run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from tierflow.config import Settings, reads_settings
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.lifecycle.clock import wall_clock_ms
from tierflow.lifecycle.removal.mark import delete_topic, plan_topic_deletion
from tierflow.lifecycle.removal.remove import pending_removals, remove_partition
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.runtime import open_objects, open_storage, open_store
from tierflow.storage.keys import BucketKeys, key_layout
from tierflow.tasks.attribution import attributed
from tierflow.tasks.shards import ShardOutcome, check_run, cut_shards, run_partitions

log = logging.getLogger(__name__)

ACTOR = "airflow:remote_partition_removal"


@reads_settings
def detect_deleted_topics(*, dry_run: bool, settings: Settings | None = None) -> dict:
    """Mark topics gone from the log dirs (and the cluster, with a bootstrap configured)."""
    from tierflow.lifecycle.removal.detect import (
        ALREADY_MARKED,
        candidate_topic_names,
        find_deleted_topics,
    )

    store = open_store(settings)
    cluster = None
    if settings.cluster.bootstrap_servers:
        from tierflow.kafka.cluster_metadata import read_cluster_topics

        # Asked by name: a full listing silently leaves out topics we may not describe.
        cluster = read_cluster_topics(
            settings.cluster.bootstrap_servers, topics=candidate_topic_names(store)
        )
    diskless = {t.topic_id for t in DisklessCoordinator.for_store(store).diskless_topics()}
    detection = find_deleted_topics(
        store, log_dirs=settings.log_dirs, cluster=cluster, diskless_topic_ids=diskless
    )
    marked = []
    for gone in detection.deleted:
        log.warning(
            "topic %s (%s) is gone (%s: %s)%s",
            gone.name,
            gone.topic_id,
            gone.source,
            gone.reason,
            ": would mark it for remote removal" if dry_run else ": marking it for remote removal",
        )
        if dry_run:
            deletion = plan_topic_deletion(store, gone.name, topic_id=gone.topic_id)
        else:
            deletion = delete_topic(
                store,
                gone.name,
                topic_id=gone.topic_id,
                actor=attributed(ACTOR),
                now_ms=wall_clock_ms(),
            )
        marked.append(deletion.as_dict())
    if not dry_run:
        for kept in detection.kept:
            if kept.reason == ALREADY_MARKED:  # a run stopped between marking and retiring
                delete_topic(
                    store,
                    kept.name,
                    topic_id=kept.topic_id,
                    actor=attributed(ACTOR),
                    now_ms=wall_clock_ms(),
                )
    return {"dry_run": dry_run, "detection": detection.as_dict(), "marked": marked}


@reads_settings
def list_pending_removals(settings: Settings | None = None) -> list[dict]:
    """Every partition STARTED, or MARKED longer than TIERFLOW_REMOVAL_GRACE_S ago, oldest
    first: the mapped removal tasks' inputs."""
    store = open_store(settings)
    jobs = pending_removals(store, grace_ms=settings.removal_grace_s * 1000, now_ms=wall_clock_ms())
    pending = [
        {
            "topic": kafka_topic_name(store.topic_by_id(job.topic_id).name),
            "topic_id": job.topic_id,
            "partition": job.partition,
            "state": str(job.delete_state),
        }
        for job in jobs
    ]
    log.info("%d partition(s) of deleted topics to remove", len(pending))
    return pending


@reads_settings
def plan_removal_shards(settings: Settings | None = None) -> list[dict]:
    """The pending removals in at most TIERFLOW_MAX_SHARDS shards (they touch only the bucket
    and the store, so no broker's queue is needed)."""
    return cut_shards(list_pending_removals(settings), max_shards=settings.max_shards)


@reads_settings
def remove_shard(shard: dict, *, dry_run: bool, settings: Settings | None = None) -> ShardOutcome:
    """Carry each partition of the shard on; a failure is named and the others go ahead."""
    return run_partitions(
        shard["targets"],
        lambda job: remove_one(job, dry_run=dry_run, settings=settings),
        what="removal:",
        shard=shard.get("index"),
    )


@reads_settings
def remove_one(job: dict, *, dry_run: bool, settings: Settings | None = None) -> dict:
    """Carry one partition's removal to FINISHED (or, dry, say what it would delete)."""
    store = open_store(settings)
    if dry_run:
        plan = plan_topic_deletion(store, job["topic"], topic_id=job["topic_id"])
        log.info(
            "would remove %s-%d (%s): topic holds %d remote segment(s), %d bytes",
            job["topic"],
            job["partition"],
            job["topic_id"],
            plan.remote_segments,
            plan.remote_bytes,
        )
        return {**job, "dry_run": True}
    report = remove_partition(
        store,
        open_storage(settings),
        open_objects(settings),
        job["topic_id"],
        int(job["partition"]),
        where=BucketKeys(settings.storage.prefix, key_layout(settings.storage.layout)),
        actor=attributed(ACTOR),
    )
    return {**report.as_dict(), "dry_run": False}


def summarize_shards(
    detected: dict | None, shards: Sequence[dict], outcomes: Sequence[ShardOutcome | None]
) -> dict:
    """summarize over every shard's results; red, naming them, if any partition failed."""
    results = [r for outcome in filter(None, outcomes) for r in outcome.results]
    summary = summarize(detected, results)
    check_run(shards, outcomes)
    return summary


def summarize(detected: dict | None, results: Sequence[dict | None]) -> dict:
    """One line per run; fails when detection failed, so the run shows red."""
    done = [r for r in results if r]
    removed = [r for r in done if r.get("finished")]
    segments = sum(len(r.get("deleted", [])) for r in done)
    log.info(
        "%d partition(s) processed, %d finished, %d segment(s) deleted",
        len(done),
        len(removed),
        segments,
    )
    if detected is None:
        raise RuntimeError(
            "deleted-topic detection failed (see the detect task's log); partitions already "
            "marked were still processed"
        )
    return {"processed": len(done), "finished": len(removed), "segments_deleted": segments}
