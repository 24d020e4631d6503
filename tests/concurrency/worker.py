"""One run of a DAG (its task bodies, in task order) or of the CLI, in its own process.

python -m tests.concurrency.worker RESULT_JSON copy-dag RUN_ID
python -m tests.concurrency.worker RESULT_JSON copy-cli OWNER
python -m tests.concurrency.worker RESULT_JSON retention NOW_MS
python -m tests.concurrency.worker RESULT_JSON disable TOPIC POLICY RUN_ID

Settings come from the environment, as in an Airflow task. A failing task is recorded (its
exception type and message) and the run goes on as Airflow would: the other mapped tasks still
run, and tasks downstream of a failed one do not. The outcome is written as JSON.

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
from tierflow.tasks import segment_copy as copy_tasks
from tierflow.tasks.disablement import apply_request, complete_request
from tierflow.tasks.retention import expire_partition, list_retention_targets, summarize

ENV_START_FILE = "CONCURRENCY_START_FILE"
ENV_READY_FILE = "CONCURRENCY_READY_FILE"
ENV_DELAY_MS = "CONCURRENCY_DELAY_MS"
# Set by Airflow's task runner for every task (context_to_airflow_vars), as here.
ENV_AIRFLOW_RUN_ID = "AIRFLOW_CTX_DAG_RUN_ID"
START_TIMEOUT_S = 120


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
    """segment_copy: prepare per partition, one rewrite in the worker, finalize per partition
    (all three run even when an upstream task failed: ALL_DONE), then summarize."""
    t = copy_tasks
    settings = Settings.from_env()
    os.environ[ENV_AIRFLOW_RUN_ID] = run_id
    targets = t.list_copy_targets(settings)
    prepared = [
        task(
            outcome,
            f"prepare:{x['topic']}-{x['partition']}",
            lambda x=x: t.prepare_target(x, lease_ttl_s=900, settings=settings),
        )
        for x in targets
    ]
    batch = t.plan_rewrite(prepared, run_key=run_id, settings=settings)
    task(outcome, "rewrite", lambda: t.rewrite_in_worker(batch, settings))
    reports = [
        task(
            outcome,
            f"finalize:{x['topic']}-{x['partition']}",
            lambda p=p: t.finalize_target(p, batch, settings),
        )
        for x, p in zip(targets, prepared, strict=True)
    ]
    if not any(name.startswith("finalize:") for name in outcome["failed"]):
        task(outcome, "summarize", lambda: t.summarize(reports))  # all_success downstream


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
