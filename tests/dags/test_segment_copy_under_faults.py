"""The segment_copy DAG, run by Airflow, against a bucket that fails now and then: every
transient fault is retried inside the task, so the run succeeds at its first try and every
remote copy reads back byte-identical."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.faulty_storage import storage_fault_env
from tests.support.segment_copy_dag import live_segments, run_dag
from tests.support.tiered import build_tiered, eligible
from tierflow.lifecycle.copy.verify import verify_partition
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

FAULTS = "put:error:1-2;put:timeout:4;stat:error:3;read:reset:1;read:timeout:5;list:error:1"


def test_transient_storage_faults_do_not_fail_the_run(tmp_path: Path) -> None:
    t = build_tiered(tmp_path, layout="chunked-encrypted")
    trace = tmp_path / "storage-faults"
    env = {
        **t.settings.as_env(),
        **storage_fault_env(FAULTS, trace=trace),  # for every Python process of the run
        "TIERFLOW_STORAGE_RETRY_BASE_MS": "5",
        "TIERFLOW_STORAGE_RETRY_MAX_MS": "20",
    }
    assert run_dag(tmp_path, env, "faulty") == "success"
    injected = trace.read_text().splitlines()
    assert len(injected) >= 6, injected  # the faults were really met, in the task processes
    for log_ in t.logs():
        assert live_segments(t, log_.topic, log_.partition) == [
            (start, end, S.COPY_SEGMENT_FINISHED) for start, end in eligible(log_)
        ]
        checks = verify_partition(log_, t.store.topic(log_.topic), t.store, t.rsm)
        assert checks and all(c.identical for c in checks), checks
