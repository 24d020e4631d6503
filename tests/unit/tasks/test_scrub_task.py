"""The remote_scrub DAG's task bodies, called directly: each open finding is repaired by the
lane (queue) of the broker leading its partition, and by no other; the last task is red while
any finding stays open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.tiered import Tiered, build_tiered
from tierflow.cluster.leaders import leader_logs
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.tasks.scrub import OpenFindingsError, check_findings, repair_lane, scrub_bucket


@pytest.fixture
def damaged(tmp_path: Path) -> tuple[Tiered, str]:
    t = build_tiered(tmp_path)
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="test")
    victim = t.store.scrub_queue(limit=1)[0].segment_id
    (key,) = [o.key for o in t.store.segment_objects(victim) if o.kind == "log"]
    (t.bucket() / key).write_bytes(b"not what was uploaded")
    summary = scrub_bucket(None, settings=t.settings)
    assert json.loads(json.dumps(summary)) == summary
    assert (summary["findings"], summary["budget_bytes"]) == (1, t.settings.scrub_budget_bytes)
    return t, victim


def test_the_leaders_lane_takes_the_finding_and_no_other(damaged: tuple[Tiered, str]) -> None:
    t, victim = damaged
    (broker,) = {found.broker for found in leader_logs(t.settings)}
    queues = {broker: "kafka-broker-x"}
    assert repair_lane("default", queues, dry_run=True, settings=t.settings) == []
    (planned,) = repair_lane("kafka-broker-x", queues, dry_run=True, settings=t.settings)
    assert (planned["segment_id"], planned["action"]) == (victim, "recopied")
    (on_default,) = repair_lane("default", {}, dry_run=True, settings=t.settings)
    assert on_default["segment_id"] == victim, "a broker without a queue is the default lane's"


def test_check_findings_is_red_until_the_repair(damaged: tuple[Tiered, str]) -> None:
    t, victim = damaged
    with pytest.raises(OpenFindingsError, match="1 scrub finding"):
        check_findings(settings=t.settings)
    (done,) = repair_lane("default", {}, dry_run=False, settings=t.settings)
    assert (done["segment_id"], done["action"], done["dry_run"]) == (victim, "recopied", False)
    assert check_findings(settings=t.settings) == 0
