"""
### Retention expiry (nightly)

Expires tiered data as Kafka's RLMExpirationTask and local retention do, every night at 02:00
UTC: one task plans, then one mapped task per shard (at most `TIERFLOW_MAX_SHARDS`, by broker,
on the broker's queue from `TIERFLOW_BROKER_QUEUES`) expires each of its partitions; a partition
that fails is named, and the others go ahead.

* **Now** for a run is its data interval end, so a backfill evaluates each night as of that
  night: `airflow backfill create --dag-id retention_expiry --from-date … --to-date …
  --max-active-runs 1` (without the last flag a backfill runs several nights at once).
* **Local retention** (first): `local.retention.ms/bytes` (-2: same as `retention.*`). A local
  segment goes only when its remote copy is COPY_SEGMENT_FINISHED, and only as a prefix from the
  oldest. Files are deleted from the broker's log dirs only with
  `TIERFLOW_DELETE_LOCAL_SEGMENTS=true`; otherwise the run reports what it would free.
* **Remote retention**: `retention.ms` against each segment's max timestamp, `retention.bytes`
  over local-only plus remote bytes in the leader-epoch lineage, segments below the log start
  offset or outside the lineage; the log start offset moves first, then each segment goes
  DELETE_SEGMENT_STARTED → storage delete → DELETE_SEGMENT_FINISHED. Deletes left unfinished by
  an earlier failure are retried first, and COPY_SEGMENT_STARTED orphans older than
  `TIERFLOW_STALE_COPY_GRACE_S` with no live copy are removed (Kafka leaks those). Segments of
  a topic exported to Iceberg wait until the export has them (up to
  `tierflow.iceberg.retention.wait.max.ms`).
* **Iceberg snapshots** of exported topics older than the table's
  `history.expire.max-snapshot-age-ms` (5 days) are expired.
* **Dry run** prints the plan (segments and bytes per topic) and changes nothing. A manual
  trigger is one unless `dry_run` is switched off (or `{"dry_run": false}` in its conf). A
  scheduled night deletes, except the DAG's first (no earlier successful run, e.g. just
  unpaused): a dry run unless `TIERFLOW_ALLOW_FIRST_RUN=true`. A backfill deletes. An explicit
  `dry_run` in the conf always wins.
"""

from __future__ import annotations

from datetime import timedelta

from airflow.sdk import TriggerRule, get_current_context, task

from tierflow.airflow_dags.defaults import tierflow_dag
from tierflow.airflow_dags.shard_tasks import (
    Planned,
    broker_queues,
    finish_shard,
    for_lanes,
    label_shard,
    lane_outcomes,
    lanes,
    map_over_lanes,
    pick_lanes,
)
from tierflow.airflow_dags.task_helpers import (
    deleting_dry_run_param,
    dry_run,
    fail_for_good,
)

RETENTION_POOL = "tierflow_retention"


@tierflow_dag(
    schedule="0 2 * * *",
    tags=["tiered-storage", "retention"],
    params={
        "dry_run": deleting_dry_run_param(
            "Print what would be deleted (segments and bytes per topic); change nothing."
        ),
    },
    retry_delay=timedelta(minutes=1),
    max_retry_delay=timedelta(minutes=30),
)
def retention_expiry() -> None:
    queues = broker_queues()
    all_lanes = lanes(queues)

    @task
    def plan() -> Planned:
        from tierflow.tasks.retention import plan_retention_shards

        return for_lanes(plan_retention_shards(queues=queues), all_lanes)

    @task(pool=RETENTION_POOL, map_index_template="{{ shard_label }}")
    def expire(shard: dict) -> None:
        from tierflow.tasks.retention import expire_shard

        label_shard(shard)
        context = get_current_context()
        # A run triggered from the UI has no logical date, hence no data interval.
        now = context.get("data_interval_end") or context["dag_run"].run_after
        finish_shard(expire_shard(shard, now_ms=int(now.timestamp() * 1000), dry_run=dry_run()))

    @task(trigger_rule=TriggerRule.ALL_DONE)
    def report(planned: Planned) -> dict:
        from tierflow.tasks.retention import summarize_shards
        from tierflow.tasks.shards import PartitionsFailedError

        shards, outcomes = lane_outcomes("expire", planned)
        with fail_for_good(PartitionsFailedError):  # a retry of report cannot fix it
            return summarize_shards(shards, outcomes, dry_run=dry_run())

    @task
    def iceberg_snapshot_expiry() -> dict:
        from tierflow.tasks.iceberg_export import expire_iceberg_snapshots as expire_old

        context = get_current_context()
        now = context.get("data_interval_end") or context["dag_run"].run_after
        return expire_old(int(now.timestamp() * 1000), dry_run=dry_run())

    planned = plan()
    map_over_lanes(expire, "expire", pick_lanes(planned, all_lanes)) >> report(planned)
    iceberg_snapshot_expiry()


retention_expiry()
