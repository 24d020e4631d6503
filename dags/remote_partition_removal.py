"""
### Remote partition removal (KIP-405's RemotePartitionRemover), hourly

Removes the remote data of deleted topics, durably: Kafka deletes it once, from the old
leader, and leaks it on any failure; here every partition moves DELETE_PARTITION_MARKED →
DELETE_PARTITION_STARTED → DELETE_PARTITION_FINISHED and a failed or killed run is continued
by the next one (or by clearing the failed task).

1. **detect**: a registered topic is deleted when it is gone from the broker's log dirs
   (or only Kafka's `…-delete` directories remain, or the name now has a new topic id), or,
   with `TIERFLOW_KAFKA_BOOTSTRAP` set, gone from the cluster metadata. Its partitions are
   marked and its name freed, so a topic recreated with the same name never mixes with the
   old one. `tierflow delete-topic T` marks a topic by hand.
2. **remove** (one mapped task per shard of at most `TIERFLOW_MAX_SHARDS`, pool
   `tierflow_removal`): for each partition of the shard, every segment goes
   DELETE_SEGMENT_STARTED → storage delete → DELETE_SEGMENT_FINISHED, whatever is left under
   the partition's prefix is swept, then FINISHED is recorded.

**Dry run** shows what would be marked and removed, changing nothing. A manual trigger is one
unless `dry_run` is switched off (or `{"dry_run": false}` in its conf). An hourly run deletes,
except the DAG's first (no earlier successful run, e.g. just unpaused): a dry run unless
`TIERFLOW_ALLOW_FIRST_RUN=true`. An explicit `dry_run` in the conf always wins.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import TriggerRule, task

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.shard_tasks import finish_shard, label_shard, shard_outcomes
from tierflow.airflow_dags.task_helpers import (
    deleting_dry_run_param,
    dry_run,
    run_param,
    switch_param,
)

REMOVAL_POOL = "tierflow_removal"


@tierflow_dag(
    schedule="@hourly",  # remote.partition.remover.task.interval.ms = 1 hour
    tags=["tiered-storage", "topic-deletion"],
    params={
        "detect": switch_param(
            True,
            "Detect deleted topics",
            "Look for topics gone from the log dirs (and the cluster, when "
            "TIERFLOW_KAFKA_BOOTSTRAP is set) and mark them; off: only continue marked ones.",
        ),
        "dry_run": deleting_dry_run_param(
            "Print what would be marked and removed; change nothing."
        ),
    },
    retry_delay=timedelta(minutes=1),
    max_retry_delay=timedelta(minutes=30),
)
def remote_partition_removal() -> None:
    @task
    def detect() -> dict:
        from tierflow.tasks.partition_removal import detect_deleted_topics

        if not run_param("detect"):
            return {"skipped": True, "marked": []}
        return detect_deleted_topics(dry_run=dry_run())

    # Partitions marked earlier are removed even when detection fails (summarize still fails).
    @task(trigger_rule=TriggerRule.ALL_DONE)
    def plan() -> list[dict]:
        from tierflow.tasks.partition_removal import plan_removal_shards

        return plan_removal_shards()

    @task(pool=REMOVAL_POOL, map_index_template="{{ shard_label }}")
    def remove(shard: dict) -> None:
        from tierflow.tasks.partition_removal import remove_shard

        label_shard(shard)
        finish_shard(remove_shard(shard, dry_run=dry_run()))

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def summarize(detected: dict | None, shards: list[dict]) -> dict:
        from tierflow.tasks.partition_removal import summarize_shards

        return summarize_shards(detected, shards, shard_outcomes("remove", len(shards)))

    detected = detect()
    shards = plan()
    detected >> shards
    summarize(detected, shards) << remove.expand(shard=shards)


remote_partition_removal()
