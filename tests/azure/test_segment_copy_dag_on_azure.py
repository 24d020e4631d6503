"""The segment_copy DAG, run by Airflow itself, uploading to Azure Blob Storage (Azurite) from
Spark executors, which get the connection handed over as for S3: every segment lands, reads
back byte for byte, and the account key is nowhere in the run's log (which holds the
spark-submit command line), XComs, rendered fields or files."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.airflow_leaks import assert_leaked_nowhere, copied_keys
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, Azurite
from tests.support.tiered import build_tiered, eligible

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def test_spark_rewrites_into_azure_and_the_key_leaks_nowhere(
    tmp_path: Path, azurite: Azurite, azure_container: str
) -> None:
    t = build_tiered(
        tmp_path,
        layout="chunked-encrypted",
        remote_storage=f"abfs://{azure_container}@{ACCOUNT}/dag-run",
        spark_threshold_bytes=1,
    )
    airflow_home, log_file = tmp_path / "airflow", tmp_path / "segment_copy.log"
    state = run_dag_in_subprocess(
        "segment_copy",
        project=PROJECT,
        airflow_home=airflow_home,
        extra_env={**t.settings.as_env(), **azurite.connection_env()},
        log_file=log_file,
    )
    log_text = log_file.read_text()
    assert state == "success", log_text[-3000:]
    expected = sum(len(eligible(log_)) for log_ in t.logs())
    assert f"rewrote {expected} of {expected} segments" in log_text, "Spark did the upload"

    keys = copied_keys(t)
    stored = azurite.service().get_container_client(azure_container).list_blob_names()
    assert set(stored) == {f"dag-run/{key}" for key in keys}

    assert_leaked_nowhere((ACCOUNT_KEY,), log_text, airflow_home, tmp_path)
