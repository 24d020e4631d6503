"""After a "retain" disablement the remote data still expires; after "delete" there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import NOW_MS, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.disablement import complete_disable, request_disable
from tierflow.tasks.retention import list_retention_targets


@pytest.mark.parametrize(("policy", "expires"), [("retain", True), ("delete", False)])
def test_retention_dag_covers_retained_topics_only(tmp_path: Path, policy: str, expires: bool):
    t = build_tiered(tmp_path)
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    request_disable(t.store, "payments", policy=policy, actor="test", now_ms=NOW_MS)
    complete_disable(t.store, t.rsm, "payments", actor="test", clock=lambda: NOW_MS)
    topics = {target["topic"] for target in list_retention_targets(t.settings)}
    assert ("payments" in topics) is expires
    assert "orders" in topics
