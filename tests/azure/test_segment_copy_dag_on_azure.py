"""The segment_copy DAG, run by Airflow itself, uploading to Azure Blob Storage (Azurite) from
Spark executors, which get the connection handed over as for S3: every segment lands, reads
back byte for byte, and the account key is nowhere in the run's log (which holds the
spark-submit command line), XComs, rendered fields or files."""

from __future__ import annotations

from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.s3.test_segment_copy_dag_on_s3 import assert_leaked_nowhere
from tests.support.azurite import ACCOUNT, ACCOUNT_KEY, Azurite
from tests.support.tiered import build_tiered, eligible
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

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

    keys = set()
    for log_ in t.logs():
        topic = t.store.topic(log_.topic)
        states = [S.COPY_SEGMENT_FINISHED]
        finished = t.store.segments(topic.topic_id, log_.partition, states=states)
        assert [(r.start_offset, r.end_offset) for r in finished] == eligible(log_)
        keys |= {o.key for r in finished for o in t.store.segment_objects(r.segment_id)}
        checks = verify_partition(log_, topic, t.store, t.rsm)
        assert checks and all(check.identical for check in checks), checks
    stored = azurite.service().get_container_client(azure_container).list_blob_names()
    assert set(stored) == {f"dag-run/{key}" for key in keys}

    assert_leaked_nowhere((ACCOUNT_KEY,), log_text, airflow_home, tmp_path)
