"""Shards: bounded in number whatever the partition count, one broker each, balanced by bytes;
a failing partition is named and does not stop the others."""

from __future__ import annotations

import json

import pytest

from tierflow.tasks.shards import (
    PartitionFailure,
    PartitionsFailedError,
    ShardFailedError,
    ShardOutcome,
    check_run,
    cut_shards,
    failures_of,
    raise_on_failures,
    run_partitions,
    shard_outcome,
)


def targets(count: int, *, brokers: int = 1, size=lambda p: 100) -> list[dict]:
    return [
        {"topic": "t", "partition": p, "broker": 1 + p % brokers, "bytes": size(p)}
        for p in range(count)
    ]


def keys(shards: list[dict]) -> list[tuple[str, int]]:
    return [(t["topic"], t["partition"]) for s in shards for t in s["targets"]]


@pytest.mark.parametrize("count", [0, 1, 7, 1_100, 20_000])
def test_never_more_shards_than_the_setting_and_every_partition_once(count: int) -> None:
    shards = cut_shards(targets(count, brokers=3), max_shards=16)
    assert len(shards) <= 16
    assert sorted(keys(shards)) == [("t", p) for p in range(count)]
    assert [s["index"] for s in shards] == list(range(len(shards)))


def test_a_shard_holds_one_broker_and_every_broker_gets_one() -> None:
    shards = cut_shards(targets(1_000, brokers=5), max_shards=8)
    assert {s["broker"] for s in shards} == {1, 2, 3, 4, 5}
    for shard in shards:
        assert {t["broker"] for t in shard["targets"]} == {shard["broker"]}
        assert shard["queue"] == "default"


def test_brokers_with_equal_work_get_equal_shards() -> None:
    shards = cut_shards(targets(1_120, brokers=2), max_shards=4)
    assert sorted(s["broker"] for s in shards) == [1, 1, 2, 2]
    assert sorted(len(s["targets"]) for s in shards) == [280, 280, 280, 280]


def test_more_brokers_than_shards_still_keeps_brokers_apart() -> None:
    shards = cut_shards(targets(40, brokers=5), max_shards=2)
    assert len(shards) == 5
    assert all(len({t["broker"] for t in s["targets"]}) == 1 for s in shards)


def test_bytes_are_balanced_within_a_broker() -> None:
    sizes = [1_000_000, *([1_000] * 999)]
    shards = cut_shards(targets(1_000, size=lambda p: sizes[p]), max_shards=4)
    loads = sorted(s["bytes"] for s in shards)
    assert len(shards) == 4
    assert loads[-1] == 1_000_000, "the one big partition gets a shard of its own"
    assert loads[0] == loads[1] == loads[2] == 333_000


def test_shards_are_named_after_their_partitions() -> None:
    (one,) = cut_shards(targets(1), max_shards=4)
    assert one["label"] == "broker 1: t-0"
    (many,) = cut_shards(targets(3), max_shards=1)
    assert many["label"] == "broker 1: 3 partitions, t-0 .. t-2"


def test_a_failing_partition_is_named_and_the_others_go_ahead() -> None:
    def work(target: dict) -> dict:
        if target["partition"] == 1:
            raise ValueError("bad segment at 00000000000000000042.log position 7")
        return {"done": target["partition"]}

    outcome = run_partitions(targets(3), work, what="copy:")
    assert outcome.results == [{"done": 0}, {"done": 2}]
    assert outcome.failures == [
        PartitionFailure(
            topic="t",
            partition=1,
            label="t-1",
            error="ValueError: bad segment at 00000000000000000042.log position 7",
        )
    ]
    with pytest.raises(ShardFailedError, match=r"1 partition\(s\) failed: t-1 \(ValueError"):
        raise_on_failures(outcome)
    raise_on_failures(ShardOutcome())


def test_an_outcome_goes_through_xcom_as_json_and_back() -> None:
    failure = PartitionFailure(topic="t", partition=1, label="t-1", error="boom")
    outcome = ShardOutcome(shard=3, results=[{"done": 0}], failures=[failure])
    raw = json.loads(json.dumps(outcome.as_xcom()))
    assert raw["failures"] == [{"topic": "t", "partition": 1, "label": "t-1", "error": "boom"}]
    assert shard_outcome(raw) == outcome
    assert shard_outcome(None) is None


def test_a_run_names_failed_partitions_and_those_of_shards_that_left_nothing() -> None:
    first, second = targets(2), targets(4)[2:]
    shards = [{"targets": first}, {"targets": second}]
    failed = PartitionFailure(topic="t", partition=0, label="t-0", error="boom")
    outcomes = [ShardOutcome(failures=[failed]), None]  # the second shard's task died first
    found = failures_of(shards, outcomes)
    assert [(f.label, f.error) for f in found] == [
        ("t-0", "boom"),
        ("t-2", "its shard task did not finish"),
        ("t-3", "its shard task did not finish"),
    ]
    with pytest.raises(PartitionsFailedError, match=r"3 partition\(s\) were not done: t-0"):
        check_run(shards, outcomes)
    check_run(shards, [ShardOutcome(), ShardOutcome()])
