"""Two disablement requests for one topic at once, each with its completion task.

Every run of topic_disablement completes under one lease owner per topic, so a second request
with the same policy resumes the first one's work beside it rather than waiting for a killed
attempt's lease to expire; a request with the other policy is Kafka's
TIERED_STORAGE_DISABLEMENT_IN_PROGRESS. Either way: one request wins, the other gets a clear
answer, both completions end without error, each segment is deleted once (and reported by the
completion that deleted it), the topic's history is one ENABLED -> DISABLING -> DISABLED path,
and the remote data is what the winning policy leaves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.invariants import read_pristine
from tests.concurrency import checks
from tests.concurrency.backends import schedules
from tests.concurrency.disable_support import (
    ALREADY_DISABLED,
    CLEAR_ANSWERS,
    IN_PROGRESS,
    assert_disabled_consistently,
    disable_run,
    finished_ids,
    reported_deletions,
    tiered_with_an_abandoned_copy,
    topic_events,
)
from tests.concurrency.runs import start, start_together, wait_all
from tierflow.metadata.states import RemoteLogSegmentState as S

pytestmark = pytest.mark.slow

FIRST, SECOND = "manual__2026-05-01T10:00:00", "manual__2026-05-01T10:00:01"


def disabling_scenario(fresh):
    t = fresh("env")
    tiered_with_an_abandoned_copy(t)
    live = {
        r.segment_id
        for p in t.store.partitions(t.store.topic("orders").topic_id)
        for r in t.store.segments(t.store.topic("orders").topic_id, p.partition)
    }
    return t, read_pristine(t.settings.log_dirs), finished_ids(t), live


def assert_deleted_once(t, outcomes: list[dict], expected: set[str]) -> None:
    first, second = (reported_deletions(o) for o in outcomes)
    assert set(first) & set(second) == set()
    assert set(first) | set(second) == expected
    topic_id = t.store.topic("orders").topic_id
    gone = {
        r.segment_id
        for p in t.store.partitions(topic_id)
        for r in t.store.segments(topic_id, p.partition, states=[S.DELETE_SEGMENT_FINISHED])
    }
    assert gone == expected


@pytest.mark.parametrize(
    ("backend", "held_at"),
    schedules(
        ["disable.after_log_start#1", "delete.after_started#1", "disable.before_finish#1"],
        also_on_postgresql=["delete.after_started#1"],
    ),
)
def test_the_same_delete_requested_twice(fresh, solo_order, tmp_path: Path, held_at: str):
    t, pristine, finished, live = disabling_scenario(fresh)
    first = start(t.settings, tmp_path, "first", *disable_run("delete", FIRST), gated=True)
    order = solo_order(tiered_with_an_abandoned_copy, *disable_run("delete", FIRST))
    first.gate.hold_at(held_at, order)

    second_outcome = start(t.settings, tmp_path, "second", *disable_run("delete", SECOND)).wait()
    first_outcome = first.wait()

    assert checks.failures(first_outcome) == checks.failures(second_outcome) == {}
    assert first_outcome["done"]["request"]["outcome"] == "requested"
    assert second_outcome["done"]["request"]["outcome"] == "resumed"
    assert second_outcome["done"]["complete"]["finished"] is True  # it recorded DISABLED
    assert first_outcome["done"]["complete"]["finished"] is False
    assert [(src, dst) for src, dst, _ in topic_events(t)] == [
        (None, "ENABLED"),
        ("ENABLED", "DISABLING"),
        ("DISABLING", "DISABLED"),
    ]
    assert_deleted_once(t, [first_outcome, second_outcome], live)
    assert_disabled_consistently(t, "delete", finished)
    checks.assert_invariants(t, pristine)


@pytest.mark.parametrize(
    ("backend", "held_policy", "held_at"),
    schedules(
        [("retain", "disable.before_finish#1"), ("delete", "delete.after_started#1")],
        also_on_postgresql=[("retain", "disable.before_finish#1")],
    ),
)
def test_retain_and_delete_requested_at_once(
    fresh, solo_order, tmp_path: Path, held_policy: str, held_at: str
):
    t, pristine, finished, live = disabling_scenario(fresh)
    other = "delete" if held_policy == "retain" else "retain"
    first = start(t.settings, tmp_path, "first", *disable_run(held_policy, FIRST), gated=True)
    order = solo_order(tiered_with_an_abandoned_copy, *disable_run(held_policy, FIRST))
    first.gate.hold_at(held_at, order)

    second_outcome = start(t.settings, tmp_path, "second", *disable_run(other, SECOND)).wait()
    first_outcome = first.wait()

    assert checks.failures(first_outcome) == {}
    assert checks.failures(second_outcome) == {
        "request": f"{IN_PROGRESS}: tiered storage "
        "disablement of topic orders is in progress; retry once it is DISABLED"
    }
    assert "complete" not in second_outcome["done"]
    abandoned = live - finished
    assert_deleted_once(
        t, [first_outcome, second_outcome], live if held_policy == "delete" else abandoned
    )
    assert_disabled_consistently(t, held_policy, finished)
    checks.assert_invariants(t, pristine)


@pytest.mark.parametrize(
    ("backend", "policies", "stagger_ms"),
    schedules(
        [("delete+delete", 0), ("retain+delete", 0), ("delete+retain", 4)],
        also_on_postgresql=[("delete+delete", 0), ("retain+delete", 0)],
    ),
)
def test_two_requests_started_together(fresh, tmp_path: Path, policies: str, stagger_ms: int):
    t, pristine, finished, _live = disabling_scenario(fresh)
    first_policy, second_policy = policies.split("+")
    runs = start_together(
        t.settings,
        tmp_path,
        [
            ("first", "disable", disable_run(first_policy, FIRST)[1:], 0),
            ("second", "disable", disable_run(second_policy, SECOND)[1:], stagger_ms),
        ],
    )
    outcomes = wait_all(runs)

    answers = []
    for outcome in outcomes:
        failed = checks.failures(outcome)
        if failed:
            assert list(failed) == ["request"]
            assert failed["request"].startswith((IN_PROGRESS, ALREADY_DISABLED)), failed
        else:
            answers.append(outcome["done"]["request"]["outcome"])
            assert outcome["done"]["complete"]["state"] == "DISABLED"
    assert "requested" in answers and set(answers) <= set(CLEAR_ANSWERS)
    first, second = (set(reported_deletions(o)) for o in outcomes)
    assert first & second == set()
    policy = t.store.topic("orders").remote_log_disable_policy
    assert_disabled_consistently(t, policy, finished)
    checks.assert_invariants(t, pristine)
