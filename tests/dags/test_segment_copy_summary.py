"""The copy run's last task decides its colour: a partition whose prepare failed makes it red."""

from __future__ import annotations

import pytest

from tierflow.tasks.segment_copy import COPY
from tierflow.tasks.shards import PartitionsFailedError, ShardOutcome, failed
from tierflow.tasks.staged import summarize

REPORT = {"copied": [{"size_in_bytes": 10}, {"size_in_bytes": 5}], "cleaned_up": []}
SHARDS = [{"index": 0, "targets": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]}]


def test_totals_when_every_partition_was_copied() -> None:
    done = [ShardOutcome(shard=0, results=[{"plan": 0}, {"plan": 1}])]
    finalized = [ShardOutcome(shard=0, results=[REPORT, REPORT])]
    assert summarize(COPY, SHARDS, done, finalized) == {
        "partitions": 2,
        "segments": 4,
        "bytes": 30,
        "cleaned_up": 0,
        "shards": 1,
        "failed": [],
    }


def test_a_partition_whose_prepare_failed_fails_the_run_naming_it() -> None:
    lost = failed({"topic": "t", "partition": 1}, "PartitionBusyError: held")
    prepared = [ShardOutcome(shard=0, results=[{"plan": 0}], failures=[lost])]
    finalized = [ShardOutcome(shard=0, results=[REPORT])]
    with pytest.raises(PartitionsFailedError, match=r"1 partition\(s\) were not done: t-1 \("):
        summarize(COPY, SHARDS, prepared, finalized)
