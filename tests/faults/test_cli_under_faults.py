"""``tierflow copy`` against a failing bucket: one line per failed partition, naming the
segment and the key, exit 1 and no traceback; the rerun copies the rest."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.faulty_storage import FaultPlan, inject_storage_faults
from tests.support.settings_env import use_settings
from tests.support.tiered import build_tiered, eligible
from tierflow.cli import main
from tierflow.metadata.states import RemoteLogSegmentState as S


def test_copy_reports_storage_faults_per_partition_and_the_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    t = build_tiered(tmp_path)
    use_settings(monkeypatch, t.settings)
    monkeypatch.setenv("TIERFLOW_STORAGE_RETRY_BASE_MS", "1")
    monkeypatch.setenv("TIERFLOW_STORAGE_RETRY_MAX_MS", "2")
    # The 2nd put is orders-0's first .index. finalize verifies orders-0's three segments (13
    # stats: the first stops at its bad .index), then orders-1's two (stats 14-25).
    plan = FaultPlan.from_env({"TIERFLOW_STORAGE_FAULTS": "put:partial:2;stat:fatal:20"})
    assert plan is not None
    with monkeypatch.context() as faulty:
        inject_storage_faults(faulty, plan)
        assert main(["copy", "--owner", "on-call"]) == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    # One message per failed partition, on stderr.
    text = " ".join(out.err.split())
    assert text.startswith("copy: 2 partitions failed, "), text  # not "done"
    partial = r"orders-0[: ].*orders-[\w-]+/0/\d{20}-[\w-]{22}\.\w+: size \d+ bytes, uploaded \d+"
    assert re.search(partial, text), text
    fatal = r"orders-1[: ].*orders-[\w-]+/1/\d{20}-[\w-]{22}\.\w+: stat failed: 403 AccessDenied"
    assert re.search(fatal, text), text

    assert main(["copy", "--owner", "on-call"]) == 0
    for log_ in t.logs():
        topic_id = t.store.topic(log_.topic).topic_id
        rows = t.store.segments(topic_id, log_.partition, states=[S.COPY_SEGMENT_FINISHED])
        assert [(r.start_offset, r.end_offset) for r in rows] == eligible(log_)
