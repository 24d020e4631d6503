"""The shape partition_restore and iceberg_export share: a plan that writes one batch of jobs,
the batch written by Spark or, below ``TIERFLOW_SPARK_THRESHOLD_BYTES``, in the worker by the
same code, then the run finished once.

    plan_<verb> → <verb>_with_spark | <verb>_in_worker → <finish>

An operation supplies what is its own (its plan, its job, how jobs run here, its finish); the
worker's path, read the jobs and store the results where the finish reads them, is here once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tierflow.config import Settings, reads_settings
from tierflow.engine.batch_files import Batch, BatchJob, read_jobs, write_results


@dataclass(frozen=True)
class BatchOperation:
    """The steps of one batch operation: iceberg_export and partition_restore each define one,
    and their DAGs hand it over (airflow_dags.operations)."""

    # (params, *, run_key) -> the XCom of plan_<verb>: the Batch's fields (or a dry run's) and
    # the plan's own, which the finish gets back.
    plan: Callable[..., dict]
    job: Callable[..., BatchJob]  # one row of the jobs file, as keywords, to its job
    run_here: Callable[[Sequence[Any], Settings], Iterable[dict]]  # the jobs' result rows
    finish: Callable[[dict, dict], dict]  # (params, the plan's XCom) -> the run's report
    refused: tuple[type[Exception], ...] = ()  # what no retry changes: the task fails for good


@reads_settings
def run_in_worker(op: BatchOperation, batch: dict, settings: Settings | None = None) -> dict:
    """A batch below the Spark threshold, run here; its results where the finish reads them."""
    files = Batch.model_validate(batch)
    jobs = [op.job(**row) for row in read_jobs(files)]
    return write_results(files, op.run_here(jobs, settings))
