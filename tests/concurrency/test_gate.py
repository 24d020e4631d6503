"""The gate itself: a run really stops at a crash point, and goes exactly one step per release.

Everything else in this directory relies on that, so it is checked against the store: what the
held process has and has not written yet.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.concurrency.runs import start
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("backend", ["sqlite"])
def test_a_held_copy_has_done_its_step_and_not_the_next(fresh, tmp_path: Path) -> None:
    t = fresh("env")
    topic_id = t.store.topic("orders").topic_id
    run = start(t.settings, tmp_path, "copy", "copy-cli", "cli:held", gated=True)

    assert run.gate.wait_held()
    assert t.store.partition(topic_id, 0).lease_owner is None  # before the lease
    assert run.gate.release() == "copy.before_lease#1"

    assert run.gate.wait_held()
    assert t.store.partition(topic_id, 0).lease_owner == "cli:held"
    assert t.store.segments(topic_id, 0) == []  # the lease, and nothing started yet
    assert run.gate.release() == "copy.after_lease#1"

    assert run.gate.wait_held()
    # One step further: the partition's planned segments STARTED (in one transaction), none
    # uploaded or FINISHED yet.
    started = {s.segment_id for s in t.store.segments(topic_id, 0)}
    assert started
    assert {s.state for s in t.store.segments(topic_id, 0)} == {S.COPY_SEGMENT_STARTED}
    assert run.gate.release() == "copy.after_started#1"

    assert run.wait()["exit_code"] == 0
    finished = t.store.segments(topic_id, 0, states=[S.COPY_SEGMENT_FINISHED])
    assert {s.segment_id for s in finished} == started  # those very segments, and no other
    assert run.gate.passed[-1] == "copy.after_finished#7"  # every point of the run went by
