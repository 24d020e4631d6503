"""The files of one batch, as every operation of the engine writes them.

A batch is a directory per run: ``jobs.jsonl`` (what to build and upload), ``results.jsonl``
(what Spark or the worker did), and tierflow as a zip for Spark's ``--py-files``. Only the
paths travel in XCom; the job lists can be long.
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Protocol

from tierflow.config import Settings
from tierflow.engine.json_lines import read_json_lines, write_json_lines
from tierflow.ids import safe_name


class BatchJob(Protocol):
    """A job of any operation: it sizes itself and is written as one JSON line."""

    @property
    def size_in_bytes(self) -> int: ...

    def as_dict(self) -> dict: ...


def batch_dir(settings: Settings, kind: str, run_key: str) -> Path:
    """The run's directory under ``data_dir/<kind>``, created."""
    directory = settings.data_dir / kind / safe_name(run_key)
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def write_batch(
    directory: Path, jobs: Sequence[BatchJob], settings: Settings, **counts: int
) -> dict:
    """Write the jobs file and describe the batch: its files, ``counts``, its bytes, and
    whether it is big enough for Spark (``spark_threshold_bytes``) or stays in the worker."""
    jobs_file, results_file = directory / "jobs.jsonl", directory / "results.jsonl"
    write_json_lines(jobs_file, (job.as_dict() for job in jobs))
    total = sum(job.size_in_bytes for job in jobs)
    return {
        "jobs_file": str(jobs_file),
        "results_file": str(results_file),
        **counts,
        "bytes": total,
        "use_spark": bool(jobs) and total >= settings.spark_threshold_bytes,
        "python": sys.executable,
        "py_files": str(package_zip(directory)),
    }


def runs_on(batch: dict) -> str:
    """Where the batch runs, for the log."""
    return "Spark" if batch["use_spark"] else "in the worker"


def write_results(batch: dict, results: Iterable[dict]) -> dict:
    """Store the worker's results where finalize reads them; the counts for XCom."""
    rows = list(results)
    write_json_lines(Path(batch["results_file"]), rows)
    return {"segments": len(rows), "failed": sum(1 for r in rows if r["error"])}


def read_rows(batch: dict) -> list[dict]:
    """The batch's result rows; none when the run wrote no results file (it did not run)."""
    results_file = Path(batch["results_file"])
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
