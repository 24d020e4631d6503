"""What every task mapped over shards does with its outcome.

A shard task processes all its partitions, pushes what it did under the XCom key ``outcome``,
and only then fails if any partition failed: the tasks after it (trigger rule ALL_DONE) still
get the shard's work, and on-call clears just the red shard to retry its failed partitions.
"""

from __future__ import annotations

from airflow.sdk import get_current_context

OUTCOME = "outcome"


def finish_shard(outcome: dict) -> None:
    """Push what the shard did, then fail the task if any of its partitions failed."""
    from tierflow.tasks.shards import raise_on_failures

    get_current_context()["ti"].xcom_push(key=OUTCOME, value=outcome)
    raise_on_failures(outcome)


def shard_outcomes(task_id: str, count: int) -> list[dict | None]:
    """The outcome of each of ``count`` shard tasks, None where a task left none."""
    ti = get_current_context()["ti"]
    return [ti.xcom_pull(task_ids=task_id, key=OUTCOME, map_indexes=i) for i in range(count)]


def label_shard(shard: dict) -> None:
    """Name the mapped task instance after its shard in the UI (map_index_template)."""
    get_current_context()["shard_label"] = shard["label"]
