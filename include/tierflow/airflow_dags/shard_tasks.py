"""What every task mapped over shards does with its outcome, and the queue each runs on.

A shard task processes all its partitions, pushes what it did under the XCom key ``outcome``,
and only then fails if any partition failed: the tasks after it (trigger rule ALL_DONE) still
get the shard's work, and on-call clears just the red shard to retry its failed partitions.

Shards whose work reads a broker's disks run on that broker's Airflow queue. Airflow takes a
task's queue from the task, never from a mapped value, so there is one mapped task per queue
(a *lane*: ``prepare`` on ``default``, ``prepare_kafka_broker_1`` on ``kafka-broker-1``, ...),
each mapped over its own shards. The queues come from TIERFLOW_BROKER_QUEUES, read when the DAG
file is parsed, and reach the plan task as an argument, so plan and DAG always agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from airflow.sdk import get_current_context, task

if TYPE_CHECKING:
    from tierflow.tasks.shards import ShardOutcome

OUTCOME = "outcome"
DEFAULT_QUEUE = "default"
# A plan task's shards: a list with one lane, else each lane's list by lane (``for_lanes``).
Planned = list[dict] | dict[str, list[dict]]


def finish_shard(outcome: ShardOutcome) -> None:
    """Push what the shard did (as JSON), then fail the task if any of its partitions failed."""
    from tierflow.tasks.shards import raise_on_failures

    get_current_context()["ti"].xcom_push(key=OUTCOME, value=outcome.as_xcom())
    raise_on_failures(outcome)


def shard_outcomes(task_id: str, count: int) -> list[ShardOutcome | None]:
    """The outcome of each of ``count`` shard tasks, None where a task left none."""
    from tierflow.tasks.shards import shard_outcome

    ti = get_current_context()["ti"]
    pulled = (ti.xcom_pull(task_ids=task_id, key=OUTCOME, map_indexes=i) for i in range(count))
    return [shard_outcome(raw) for raw in pulled]


def label_shard(shard: dict) -> None:
    """Name the mapped task instance after its shard in the UI (map_index_template)."""
    get_current_context()["shard_label"] = shard["label"]


def broker_queues(environ: dict[str, str] | None = None) -> dict[int, str]:
    """TIERFLOW_BROKER_QUEUES, ``1=kafka-broker-1,2=kafka-broker-2``: broker id -> queue."""
    from tierflow.config import Settings

    return dict(Settings.airflow_from_env(environ).broker_queues)


def lanes(queues: dict[int, str]) -> list[str]:
    """Every queue a shard may go to: ``default`` (brokers without one) and the configured."""
    return [DEFAULT_QUEUE, *sorted(set(queues.values()) - {DEFAULT_QUEUE})]


def lane_task_id(base: str, lane: str) -> str:
    return base if lane == DEFAULT_QUEUE else f"{base}_{re.sub(r'[^A-Za-z0-9_]', '_', lane)}"


def by_lane(shards: Sequence[dict], all_lanes: Sequence[str]) -> dict[str, list[dict]]:
    """The shards of each lane, every lane present (an empty one maps to no task instance)."""
    return {lane: [s for s in shards if s["queue"] == lane] for lane in all_lanes}


def for_lanes(shards: Sequence[dict], all_lanes: Sequence[str]) -> Planned:
    """What a plan task hands on: with one lane (no broker queues), the shards themselves, which
    its mapped tasks expand over directly; with more, the shards of each lane (``by_lane``)."""
    return list(shards) if len(all_lanes) == 1 else by_lane(shards, all_lanes)


def lane_outcomes(base: str, planned: Planned) -> tuple[list[dict], list[ShardOutcome | None]]:
    """Every shard of every lane, and the outcome each left, in the same order."""
    shards, outcomes = [], []
    by_lanes = planned if isinstance(planned, dict) else {DEFAULT_QUEUE: planned}
    for lane, lane_shards in by_lanes.items():
        shards += lane_shards
        outcomes += shard_outcomes(lane_task_id(base, lane), len(lane_shards))
    return shards, outcomes


def pick_lanes(planned: Any, all_lanes: Sequence[str]) -> dict[str, Any]:
    """Each lane's shards to map over. One lane maps over the plan's own return value (the
    shards, ``for_lanes``); with more, a small task per lane hands on that lane's shards:
    Airflow maps only over a task's whole return value, never over one key of it."""
    if len(all_lanes) == 1:
        return {all_lanes[0]: planned}
    return {
        lane: _lane_shards.override(task_id=lane_task_id("shards", lane))(planned, lane)
        for lane in all_lanes
    }


@task
def _lane_shards(planned: dict[str, list[dict]], lane: str) -> list[dict]:
    return planned[lane]


def map_over_lanes(decorated: Any, base: str, picked: dict[str, Any], **partial: Any) -> list:
    """One mapped task per lane, on that lane's queue, over that lane's shards."""
    mapped: list[Any] = []
    for lane, shards in picked.items():
        lane_task: Callable = decorated.override(task_id=lane_task_id(base, lane), queue=lane)
        mapped.append(lane_task.partial(**partial).expand(shard=shards))
    return mapped
