"""A batch as the tasks after its planning see it: written once, carried through XCom as
JSON, read back as the same typed value, whatever plan an operation puts beside it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
from pydantic import ValidationError

from tierflow.config import Settings
from tierflow.engine.batch_files import Batch, read_jobs, read_rows, write_batch, write_results


@dataclass(frozen=True)
class Job:
    name: str
    size_in_bytes: int

    def as_dict(self) -> dict:
        return asdict(self)


def batch_of(tmp_path: Path, threshold: int, *sizes: int) -> Batch:
    tmp_path.mkdir(parents=True, exist_ok=True)
    settings = Settings.embedded(tmp_path, spark_threshold_bytes=threshold)
    jobs = [Job(f"job-{i}", size) for i, size in enumerate(sizes)]
    return write_batch(tmp_path, jobs, settings)


def test_a_batch_survives_xcom_and_says_where_it_runs(tmp_path: Path) -> None:
    batch = batch_of(tmp_path, 100, 60, 50)
    assert (batch.jobs, batch.bytes, batch.use_spark, batch.runs_on) == (2, 110, True, "Spark")
    back = Batch.model_validate(json.loads(json.dumps(batch.as_xcom())))
    assert back == batch
    assert back.spark_args == ["--jobs", batch.jobs_file, "--results", batch.results_file]
    assert [row["name"] for row in read_jobs(back)] == ["job-0", "job-1"]
    assert not batch_of(tmp_path / "small", 1000, 60).use_spark


def test_results_are_read_back_and_none_before_any_run(tmp_path: Path) -> None:
    batch = batch_of(tmp_path, 100, 10)
    assert read_rows(batch) == []
    counts = write_results(
        batch, [{"segment_id": "a", "error": None}, {"segment_id": "b", "error": "x"}]
    )
    assert counts == {"segments": 2, "failed": 1}
    assert [row["segment_id"] for row in read_rows(batch)] == ["a", "b"]


def test_an_operations_plan_beside_the_batch_is_ignored_but_a_missing_field_is_not(
    tmp_path: Path,
) -> None:
    batch = batch_of(tmp_path, 100, 10)
    restore_xcom = {**batch.as_xcom(), "dry_run": False, "partitions": [{"partition": 0}]}
    assert Batch.model_validate(restore_xcom) == batch
    with pytest.raises(ValidationError, match="jobs_file"):
        Batch.model_validate({"dry_run": True, "use_spark": False, "partitions": []})
