"""The files of one batch, as every operation of the engine writes them.

A batch is a directory per run: ``jobs.jsonl`` (what to build and upload), ``results.jsonl``
(what Spark or the worker did), and tierflow as a zip for Spark's ``--py-files``. Only the
``Batch`` travels in XCom, as JSON: its paths and counts; the job lists can be long.
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from tierflow.config import Settings
from tierflow.engine.json_lines import read_json_lines, write_json_lines
from tierflow.ids import safe_name


class BatchJob(Protocol):
    """A job of any operation: it sizes itself and is written as one JSON line."""

    @property
    def size_in_bytes(self) -> int: ...

    def as_dict(self) -> dict: ...


class Batch(BaseModel):
    """One batch as the tasks after its planning see it: its files, its size and counts, and
    whether it is big enough for Spark. XCom carries it as JSON (``as_xcom``); a restore's or
    an export's XCom adds its own plan beside these fields, which ``model_validate`` ignores."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    jobs_file: str
    results_file: str
    bytes: int
    use_spark: bool
    python: str  # the interpreter Spark's executors run: the planner's own
    py_files: str  # tierflow as a zip, for spark-submit --py-files
    jobs: int  # lines in the jobs file

    def as_xcom(self) -> dict:
        return self.model_dump(mode="json")

    @property
    def runs_on(self) -> str:
        """Where the batch runs, for the log."""
        return "Spark" if self.use_spark else "in the worker"

    @property
    def spark_args(self) -> list[str]:
        """The Spark app's arguments: every app in spark_apps/ reads --jobs and --results."""
        return ["--jobs", self.jobs_file, "--results", self.results_file]

    @property
    def spark_conf(self) -> dict[str, str]:
        return {"spark.pyspark.python": self.python, "spark.ui.enabled": "false"}


def batch_dir(settings: Settings, kind: str, run_key: str) -> Path:
    """The run's directory under ``data_dir/<kind>``, created."""
    directory = settings.data_dir / kind / safe_name(run_key)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def write_batch(directory: Path, jobs: Sequence[BatchJob], settings: Settings) -> Batch:
    """Write the jobs file and describe the batch: its files, its jobs and bytes, and
    whether it is big enough for Spark (``spark_threshold_bytes``) or stays in the worker."""
    jobs_file, results_file = directory / "jobs.jsonl", directory / "results.jsonl"
    write_json_lines(jobs_file, (job.as_dict() for job in jobs))
    total = sum(job.size_in_bytes for job in jobs)
    return Batch(
        jobs_file=str(jobs_file),
        results_file=str(results_file),
        bytes=total,
        use_spark=bool(jobs) and total >= settings.spark.threshold_bytes,
        python=sys.executable,
        py_files=str(package_zip(directory)),
        jobs=len(jobs),
    )


def read_jobs(batch: Batch) -> Iterator[dict]:
    """The batch's job rows, as planned."""
    return read_json_lines(Path(batch.jobs_file))


def write_results(batch: Batch, results: Iterable[dict]) -> dict:
    """Store the worker's results where finalize reads them; the counts for XCom."""
    rows = list(results)
    write_json_lines(Path(batch.results_file), rows)
    return {"segments": len(rows), "failed": sum(1 for r in rows if r["error"])}


def read_rows(batch: Batch) -> list[dict]:
    """The batch's result rows; none when the run wrote no results file (it did not run)."""
    results_file = Path(batch.results_file)
    return list(read_json_lines(results_file)) if results_file.exists() else []


def package_zip(directory: Path) -> Path:
    """tierflow as a zip for Spark's --py-files, so a cluster's executors can import it."""
    import tierflow

    root = Path(tierflow.__file__).parent
    target = directory / "tierflow.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(root.rglob("*.py")):
            archive.write(path, Path("tierflow") / path.relative_to(root))
    return target
