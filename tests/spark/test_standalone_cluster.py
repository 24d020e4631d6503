"""The copy DAG submitting its rewrite to a real Spark standalone cluster on loopback.

Same DAG, same SparkSubmitOperator: only the ``spark_default`` connection changes, from
``local[*]`` to ``spark://127.0.0.1:<port>``, as it would for a production cluster.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from dev.airflow_local import run_dag_in_subprocess
from tests.support.spark_cluster import spark_standalone
from tests.support.tiered import build_tiered, eligible
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]


def spark_connection(master_url: str) -> str:
    host, port = master_url.rsplit(":", 1)
    return json.dumps(
        {"conn_type": "spark", "host": host, "port": int(port), "extra": {"deploy-mode": "client"}}
    )


def test_segment_copy_rewrites_on_a_standalone_cluster(tmp_path: Path) -> None:
    t = build_tiered(tmp_path / "tiered", layout="chunked-encrypted", spark_threshold_bytes=1)
    with spark_standalone(tmp_path / "spark") as cluster:
        env = {
            **t.settings.as_env(),
            "AIRFLOW_CONN_SPARK_DEFAULT": spark_connection(cluster.master_url),
        }
        state = run_dag_in_subprocess(
            "segment_copy",
            project=PROJECT,
            airflow_home=tmp_path / "airflow",
            extra_env=env,
            log_file=tmp_path / "copy.log",
        )
        worker_log = cluster.logs[1].read_text(errors="replace")
    log_text = (tmp_path / "copy.log").read_text(errors="replace")
    assert state == "success", log_text[-3000:]
    assert f"spark-submit --master {cluster.master_url}" in log_text
    assert "Asked to launch executor" in worker_log, "the cluster's worker ran the job"
    expected = sum(len(eligible(log_)) for log_ in t.logs())
    assert f"rewrote {expected} of {expected} segments" in log_text
    for log_ in t.logs():
        topic_id = t.store.topic(log_.topic).topic_id
        rows = t.store.segments(topic_id, log_.partition)
        assert [(r.start_offset, r.end_offset, r.state) for r in rows] == [
            (start, end, S.COPY_SEGMENT_FINISHED) for start, end in eligible(log_)
        ]
        checks = verify_partition(log_, t.store.topic(log_.topic), t.store, t.rsm)
        assert checks and all(check.identical for check in checks), checks
    leftover = subprocess.run(
        ["pgrep", "-f", cluster.master_url.split("//")[1]], capture_output=True, text=True
    )
    assert leftover.stdout == "", "Spark daemons or executors left running"
