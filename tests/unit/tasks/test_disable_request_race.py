"""A disable request that lost a race: the topic it read ENABLED was carried to DISABLED by
another request before this one's conditional update. It is answered as if it came second:
the same policy is a no-op, another policy is Kafka's answer for a disabled topic."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.tiered import NOW_MS, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.lifecycle.disablement import complete_disable, request_disable
from tierflow.metadata.errors import InvalidConfigError
from tierflow.metadata.states import TieredState
from tierflow.tasks.disablement import _disable


def _disabled_behind_a_stale_read(tmp_path: Path):
    t = build_tiered(tmp_path)
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    read_before = t.store.topic("payments")  # what the slower request saw: ENABLED
    request_disable(t.store, "payments", policy="delete", actor="first", now_ms=NOW_MS)
    complete_disable(t.store, t.rsm, "payments", actor="first", clock=lambda: NOW_MS)
    assert read_before.state is TieredState.ENABLED
    return t, read_before


def test_the_same_policy_second_is_a_no_op(tmp_path: Path) -> None:
    t, stale = _disabled_behind_a_stale_read(tmp_path)
    outcome = _disable(t.store, stale, "delete", actor="second", now_ms=NOW_MS)
    assert outcome["outcome"] == "no-op"
    assert t.store.topic("payments").state is TieredState.DISABLED


def test_another_policy_second_gets_kafkas_answer(tmp_path: Path) -> None:
    t, stale = _disabled_behind_a_stale_read(tmp_path)
    with pytest.raises(InvalidConfigError, match="already DISABLED with policy delete"):
        _disable(t.store, stale, "retain", actor="second", now_ms=NOW_MS)
