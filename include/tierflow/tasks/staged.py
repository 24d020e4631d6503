"""The staged pipeline that copy, the diskless merge and compaction share, in bounded shards.

    plan (one task) → prepare (per shard) → plan the batch → rewrite (Spark or the worker)
    → finalize (per shard) → summarize

An operation (copy, the diskless merge, the remote compaction) supplies what is particular to
it per partition; everything about shards, failures and totals is here once. Per partition
nothing changes: each is prepared under its fenced lease, rewritten by the same code, verified
before FINISHED, and a partition that fails is named while the rest of its shard goes ahead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial

from tierflow.config import Settings, reads_settings
from tierflow.engine.batch_files import Batch
from tierflow.tasks.shards import (
    PartitionsFailedError,
    ShardOutcome,
    cut_shards,
    failures_of,
    not_done_message,
    run_partitions,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StagedOperation:
    """The per-partition steps of one staged operation: segment_copy, diskless_merge and
    remote_compaction each define one, and their DAGs hand it over (airflow_dags.operations)."""

    name: str
    targets: Callable[[Settings, dict], list[dict]]
    prepare: Callable[[dict, Settings, dict, str], dict]
    plan_batch: Callable[[Sequence[dict | None], str, Settings], Batch]
    run_in_worker: Callable[[Batch, Settings], dict]
    # The batch's results by segment id: read once per shard, not once per partition.
    results: Callable[[Batch], Mapping[str, object]]
    finalize: Callable[[dict, Mapping[str, object], Settings], dict | None]
    totals: Callable[[Sequence[dict]], dict]


@reads_settings
def plan_shards(
    op: StagedOperation,
    params: dict,
    settings: Settings | None = None,
    queues: Mapping[int, str] | None = None,
) -> list[dict]:
    """Plan the whole cluster once and cut the partitions with work into bounded shards, each
    on its broker's queue in ``queues``."""
    targets = op.targets(settings, params)
    shards = cut_shards(targets, max_shards=settings.max_shards, queues=queues)
    log.info(
        "%s: %d partitions with work, in %d shards (at most %d)",
        op.name,
        len(targets),
        len(shards),
        settings.max_shards,
    )
    return shards


@reads_settings
def prepare_shard(
    op: StagedOperation, shard: dict, *, params: dict, run_key: str, settings: Settings | None
) -> ShardOutcome:
    """Prepare each partition of the shard (its results are the prepared plans); failures are
    kept, named, and do not stop it."""
    return run_partitions(
        shard["targets"],
        lambda target: op.prepare(target, settings, params, run_key),
        what=f"{op.name}: preparing",
        shard=shard["index"],
    )


@reads_settings
def plan_batch(
    op: StagedOperation,
    outcomes: Sequence[ShardOutcome | None],
    *,
    run_key: str,
    settings: Settings | None,
) -> Batch:
    """One rewrite batch over every prepared partition of every shard."""
    prepared = [plan for outcome in filter(None, outcomes) for plan in outcome.results]
    return op.plan_batch(prepared, run_key, settings)


@reads_settings
def run_in_worker(op: StagedOperation, batch: Batch, settings: Settings | None = None) -> dict:
    return op.run_in_worker(batch, settings)


@reads_settings
def finalize_shard(
    op: StagedOperation,
    outcome: ShardOutcome | None,
    batch: Batch,
    settings: Settings | None = None,
) -> ShardOutcome:
    """Verify and finish each prepared partition of the shard, whatever the others do; its
    results are the partitions' reports. The batch's results file is read once, by the first
    partition (again by the next if that read failed: each partition that cannot read it is
    named, as before): read per partition, it made a shard's finalize quadratic."""
    prepared = outcome.results if outcome else []
    results = cache(partial(op.results, batch))
    return run_partitions(
        [_with_target(plan) for plan in prepared],
        lambda plan: op.finalize(plan["plan"], results(), settings),
        what=f"{op.name}: finalizing",
        shard=outcome.shard if outcome else None,
    )


def summarize(
    op: StagedOperation,
    shards: Sequence[dict],
    prepares: Sequence[ShardOutcome | None],
    finalizes: Sequence[ShardOutcome | None],
) -> dict:
    """The run's totals; raises naming every partition that was not done, so the run is red."""
    reports = [r for outcome in filter(None, finalizes) for r in outcome.results]
    failed = failures_of(shards, prepares, finalizes)
    totals = {**op.totals(reports), "shards": len(shards), "failed": [f.label for f in failed]}
    log.info("%s run: %s", op.name, totals)
    if failed:
        raise PartitionsFailedError(not_done_message(failed))
    return totals


def _with_target(plan: dict) -> dict:
    """A prepared plan with the topic and partition run_partitions names it by."""
    report = plan["report"]
    return {"topic": report["topic"], "partition": report["partition"], "plan": plan}
