"""A shard's finalize reads the batch's results file once, not once per partition: read per
partition, a shard of 280 partitions re-read 2,240 results 280 times (86 ms each), and the
finalize of 1,120 partitions took 133 s of a 164 s segment_copy run.

The steps are the staged pipeline's own, as the segment_copy DAG runs them, on real log dirs;
only the results reader is wrapped, to count its calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.cluster_logs import ClusterLogs, build_cluster
from tests.support.tiered import eligible
from tierflow.engine.batch_files import Batch
from tierflow.lifecycle.copy.rewrite import RewriteResult, rewrite_results
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_store
from tierflow.tasks import staged
from tierflow.tasks.segment_copy import COPY
from tierflow.tasks.shards import PartitionsFailedError

PARTITIONS = 6
SHARDS = 2


@pytest.fixture
def cluster(tmp_path: Path) -> ClusterLogs:
    built = build_cluster(tmp_path, topics=("orders",), partitions=PARTITIONS, brokers=2)
    store = open_store(built.settings)
    for name, topic_id in built.topics.items():
        store.register_topic(name, topic_id, actor="test", now_ms=0, remote_storage_enable=True)
    return built


class CountedResults:
    """rewrite_results, counting its calls; the first ``failing`` calls raise as a lost
    results file would."""

    def __init__(self, failing: int = 0) -> None:
        self.calls = 0
        self.failing = failing

    def __call__(self, batch: Batch) -> Mapping[str, RewriteResult]:
        self.calls += 1
        if self.calls <= self.failing:
            raise OSError(f"cannot read {batch.results_file}")
        return rewrite_results(batch)


def copy_run(cluster: ClusterLogs, results: CountedResults) -> dict:
    op = replace(COPY, results=results)
    settings = cluster.settings.updated(max_shards=SHARDS)
    shards = staged.plan_shards(op, {}, settings)
    assert len(shards) == SHARDS
    prepares = [
        staged.prepare_shard(op, s, params={}, run_key="r", settings=settings) for s in shards
    ]
    batch = staged.plan_batch(op, prepares, run_key="r", settings=settings)
    op.run_in_worker(batch, settings)
    finalizes = [staged.finalize_shard(op, p, batch, settings) for p in prepares]
    return staged.summarize(op, shards, prepares, finalizes)


def finished(cluster: ClusterLogs) -> dict[int, int]:
    store = open_store(cluster.settings)
    topic_id = cluster.topics["orders"]
    return {
        p: sum(s.state == S.COPY_SEGMENT_FINISHED for s in store.segments(topic_id, p))
        for p in range(PARTITIONS)
    }


def test_each_shard_reads_the_results_once(cluster: ClusterLogs) -> None:
    results = CountedResults()
    totals = copy_run(cluster, results)
    assert results.calls == SHARDS
    expected = {p: len(eligible(cluster.leader_log("orders", p))) for p in range(PARTITIONS)}
    assert all(expected.values())
    assert totals["partitions"] == PARTITIONS and totals["failed"] == []
    assert finished(cluster) == expected


def test_a_partition_that_cannot_read_them_is_named_and_the_next_reads_again(
    cluster: ClusterLogs,
) -> None:
    results = CountedResults(failing=1)
    with pytest.raises(PartitionsFailedError, match=r"cannot read .*results") as failed:
        copy_run(cluster, results)
    assert results.calls == SHARDS + 1  # the first partition's failed read, then one per shard
    assert str(failed.value).count("orders-") == 1, "only the first partition failed"
    done = finished(cluster)
    assert sorted(done.values()).count(0) == 1, "the others finished their segments"
