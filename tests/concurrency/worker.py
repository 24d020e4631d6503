"""One run of a DAG (its task bodies, in task order) or of the CLI, in its own process.

python -m tests.concurrency.worker RESULT_JSON copy-dag RUN_ID
python -m tests.concurrency.worker RESULT_JSON copy-cli OWNER
python -m tests.concurrency.worker RESULT_JSON retention NOW_MS
python -m tests.concurrency.worker RESULT_JSON disable TOPIC POLICY RUN_ID

Settings come from the environment, as in an Airflow task. A failing task is recorded (its
exception type and message; for a shard task, each partition it names as failed) and the run
goes on as Airflow would: the other mapped tasks still run, and a task downstream of a failed
one runs only if its trigger rule says so. The outcome is written as JSON.

With CONCURRENCY_START_FILE set, the run (its imports done, CONCURRENCY_READY_FILE touched)
first waits for that file to appear, so that several processes start together;
CONCURRENCY_DELAY_MS then staggers them by a few milliseconds.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

# Imported here, not in each operation: a forked child (runs.py) starts with them loaded.
from tierflow.cli import main as cli_main
from tierflow.config import Settings
from tierflow.engine.batch_files import Batch
from tierflow.tasks import staged
from tierflow.tasks.disablement import apply_request, complete_request
from tierflow.tasks.retention import expire_partition, list_retention_targets, summarize
from tierflow.tasks.segment_copy import COPY
from tierflow.tasks.shards import ShardOutcome, shard_outcome

ENV_START_FILE = "CONCURRENCY_START_FILE"
ENV_READY_FILE = "CONCURRENCY_READY_FILE"
ENV_DELAY_MS = "CONCURRENCY_DELAY_MS"
# Set by Airflow's task runner for every task (context_to_airflow_vars), as here.
ENV_AIRFLOW_RUN_ID = "AIRFLOW_CTX_DAG_RUN_ID"
START_TIMEOUT_S = 120
DAG_PARAMS: dict = {}  # segment_copy declares no params; the lease TTL comes from the settings


def task(outcome: dict, name: str, body: Callable[[], Any]) -> Any:
    """Run one task body; a failure is recorded under ``name`` and returns None."""
    try:
        result = body()
    except Exception as exc:
        outcome["failed"][name] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()  # into the run's output.log, which a failing test shows
        return None
    outcome["done"][name] = result
    return result


def copy_dag(outcome: dict, run_id: str) -> None:
    """segment_copy as wire_staged_pipeline runs it (airflow_dags/staged_pipeline.py): the
    library calls its tasks make, their values passed as XCom carries them. plan (no shards:
    the rest is skipped); prepare per shard; plan_rewrite; rewrite_in_worker; finalize per
    shard and summarize, both ALL_DONE: they run whatever failed before them."""
    os.environ[ENV_AIRFLOW_RUN_ID] = run_id
    shards = task(outcome, "plan", lambda: xcom(staged.plan_shards(COPY, DAG_PARAMS)))
    if not shards:
        return
    prepares = [
        shard_task(outcome, "prepare", s, lambda s=s: prepare_shard(s, run_id)) for s in shards
    ]
    planned = task(outcome, "plan_rewrite", lambda: plan_rewrite(prepares, run_id))
    finalizes: list[ShardOutcome | None] = [None] * len(shards)  # no batch: nothing to finalize
    if planned is not None:
        batch = Batch.model_validate(planned)
        task(outcome, "rewrite_in_worker", lambda: rewrite_in_worker(batch))
        finalizes = [
            shard_task(outcome, "finalize", s, lambda p=p: staged.finalize_shard(COPY, p, batch))
            for s, p in zip(shards, prepares, strict=True)
        ]
    task(outcome, "summarize", lambda: staged.summarize(COPY, shards, prepares, finalizes))


def xcom(value: Any) -> Any:
    """``value`` as a later task reads it back from XCom: JSON, so tuples come back as lists."""
    return json.loads(json.dumps(value))


def shard_task(
    outcome: dict, step: str, shard: dict, body: Callable[[], ShardOutcome]
) -> ShardOutcome | None:
    """One mapped shard task: the outcome it pushes (None when it failed without one). Each
    partition it names as failed is recorded as ``step:topic-partition`` with its error; the
    task then ends red (finish_shard), which the per-partition entries already say."""
    pushed = task(outcome, f"{step}[{shard['index']}]", lambda: xcom(body().as_xcom()))
    result = shard_outcome(pushed)
    for failure in result.failures if result else []:
        outcome["failed"][f"{step}:{failure.label}"] = failure.error
    return result


def prepare_shard(shard: dict, run_id: str) -> ShardOutcome:
    """prepare's call: settings None, so each task reads them from its environment."""
    return staged.prepare_shard(COPY, shard, params=DAG_PARAMS, run_key=run_id, settings=None)


def plan_rewrite(prepares: list[ShardOutcome | None], run_id: str) -> dict:
    """plan_rewrite's call; the batch goes on as XCom, and each later task validates it."""
    return staged.plan_batch(COPY, prepares, run_key=run_id, settings=None).as_xcom()


def rewrite_in_worker(batch: Batch) -> dict:
    """plan_rewrite branches a batch below the Spark threshold here, as every batch of these
    small logs is; these runs have no Spark for rewrite_with_spark."""
    if batch.use_spark:
        raise RuntimeError(f"a {batch.bytes}-byte batch needs Spark, which these runs lack")
    return staged.run_in_worker(COPY, batch)


def copy_cli(outcome: dict, owner: str) -> None:
    """``tierflow copy --owner OWNER``: every partition, one after the other."""
    code = task(outcome, "cli", lambda: cli_main(["copy", "--owner", owner]))
    outcome["exit_code"] = code


def retention(outcome: dict, now_ms: int) -> None:
    """retention_expiry as of ``now_ms``: local then remote retention per partition."""
    settings = Settings.from_env()
    results = [
        task(
            outcome,
            f"expire:{x['topic']}-{x['partition']}",
            lambda x=x: expire_partition(x, now_ms=now_ms, dry_run=False, settings=settings),
        )
        for x in list_retention_targets(settings)
    ]
    task(outcome, "report", lambda: summarize(results, dry_run=False))


def disable(outcome: dict, topic: str, policy: str, run_id: str) -> None:
    """topic_disablement: request, then complete unless the request was rejected."""
    settings = Settings.from_env()
    actor = f"airflow:topic_disablement:{run_id}"
    request = task(
        outcome,
        "request",
        lambda: apply_request(topic, "disable", policy, actor=actor, settings=settings),
    )
    if request is not None:
        task(outcome, "complete", lambda: complete_request(topic, actor=actor, settings=settings))


OPERATIONS: dict[str, Callable[..., None]] = {
    "copy-dag": copy_dag,
    "copy-cli": copy_cli,
    "retention": lambda outcome, now_ms: retention(outcome, int(now_ms)),
    "disable": disable,
}


def wait_for_start() -> None:
    ready = os.environ.get(ENV_READY_FILE)
    if ready:
        Path(ready).touch()
    start = os.environ.get(ENV_START_FILE)
    if start:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not os.path.exists(start):
            if time.monotonic() > deadline:
                raise SystemExit(f"{start} never appeared")
            time.sleep(0.0005)
    delay_ms = int(os.environ.get(ENV_DELAY_MS) or 0)
    if delay_ms:
        time.sleep(delay_ms / 1000)


def main(argv: list[str]) -> int:
    result_file, operation, *args = argv
    outcome: dict = {"operation": operation, "args": args, "done": {}, "failed": {}}
    wait_for_start()
    try:
        OPERATIONS[operation](outcome, *args)
    finally:
        Path(result_file).write_text(json.dumps(outcome, default=str, indent=1))
    return 0


def child(env: Mapping[str, str], output: str, argv: Sequence[str]) -> None:
    """Entry point of a process forked by runs.py: the run's environment and output file, as a
    fresh ``python -m tests.concurrency.worker`` would have them, then ``main``."""
    os.environ.clear()
    os.environ.update(env)
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    try:
        code = main(list(argv))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
