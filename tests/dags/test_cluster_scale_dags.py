"""segment_copy, retention_expiry and remote_partition_removal through Airflow over 1,120
partitions on two brokers, with ``[core] max_map_length`` at its default (1024).

Before shards, a run over more than 1,024 partitions failed before copying anything: the
partition list was mapped, and Airflow refuses to map that many. Now each run maps over at most
TIERFLOW_MAX_SHARDS shards, reads only the leaders' replicas (the lagging followers hold less),
and every partition is still carried through on its own. The shards that read a broker's
disks run on that broker's queue (TIERFLOW_BROKER_QUEUES).
"""

from __future__ import annotations

import shutil
import sqlite3
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text

from dev.airflow_local import run_dag_in_subprocess
from tests.support.cluster_logs import ClusterLogs, build_cluster
from tests.support.tiered import eligible
from tierflow.kafka.log_dir import LogDir
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_objects, open_store

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

PROJECT = Path(__file__).resolve().parents[2]
TOPICS = ("orders", "clicks")
PARTITIONS = 560  # per topic: 1,120 in all
MAX_SHARDS = 4
QUEUES = {1: "kafka-broker-1", 2: "kafka-broker-2"}
LOGICAL_DATE = datetime(2026, 9, 23, 2, 0, tzinfo=UTC)  # the nightly run's "now"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> ClusterLogs:
    # Every follower lags (lag_every=1): it lacks its leader's active segment and newest epoch.
    built = build_cluster(
        tmp_path_factory.mktemp("two-brokers"),
        topics=TOPICS,
        partitions=PARTITIONS,
        brokers=2,
        segments=3,
        lag_every=1,
    )
    built.env["TIERFLOW_MAX_SHARDS"] = str(MAX_SHARDS)
    built.env["TIERFLOW_BROKER_QUEUES"] = ",".join(f"{b}={QUEUES[b]}" for b in built.brokers)
    store = open_store(built.settings)
    for name, topic_id in built.topics.items():
        store.register_topic(name, topic_id, actor="test", now_ms=0, remote_storage_enable=True)
    return built


def run(cluster: ClusterLogs, dag_id: str, **kwargs) -> str:
    return run_dag_in_subprocess(
        dag_id,
        project=PROJECT,
        airflow_home=cluster.base / "airflow",
        extra_env=cluster.env,
        log_file=cluster.base / f"{dag_id}.log",
        timeout_s=900,
        **kwargs,
    )


def task_instances(cluster: ClusterLogs, dag_id: str) -> Counter[tuple[str, str]]:
    """Task instances of the DAG's runs, by task id and queue, from Airflow's own database."""
    with sqlite3.connect(cluster.base / "airflow" / "airflow.db") as db:
        query = "SELECT task_id, queue FROM task_instance WHERE dag_id = ?"
        return Counter(db.execute(query, (dag_id,)))


def on_broker_queues(tis: Counter[tuple[str, str]], base: str) -> int:
    """The shard tasks of ``base``, each on its broker's queue, one lane per broker."""
    lanes = {b: tis[(f"{base}_{q.replace('-', '_')}", q)] for b, q in QUEUES.items()}
    assert all(lanes.values()), f"every broker's shards run on its queue: {tis}"
    return sum(lanes.values())


def live_segments(cluster: ClusterLogs) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(start, end) of the FINISHED segments of every partition, in one query."""
    store = open_store(cluster.settings)
    names = {topic_id: name for name, topic_id in cluster.topics.items()}
    query = text(
        "SELECT topic_id, partition, start_offset, end_offset FROM remote_log_segments "
        "WHERE state = :s ORDER BY topic_id, partition, start_offset"
    )
    found: dict[tuple[str, int], list[tuple[int, int]]] = {}
    with store.engine.connect() as connection:
        for topic_id, partition, start, end in connection.execute(
            query, {"s": S.COPY_SEGMENT_FINISHED.value}
        ):
            found.setdefault((names[topic_id], partition), []).append((start, end))
    return found


def test_copy_retention_and_removal_over_1120_partitions(cluster: ClusterLogs) -> None:
    assert run(cluster, "segment_copy") == "success"
    copied = live_segments(cluster)
    expected = {
        (name, p): eligible(cluster.leader_log(name, p))
        for name in TOPICS
        for p in range(PARTITIONS)
    }
    assert copied == expected, "every partition copied from its leader, as far as the leader has"
    assert all(len(v) == 2 for v in copied.values())
    follower = LogDir(cluster.log_dirs[cluster.replicas(0)[1]]).partition("orders", 0)
    assert len(eligible(follower)) == 1, "a copy from the lagging follower would have less"
    tis = task_instances(cluster, "segment_copy")
    assert on_broker_queues(tis, "prepare") == on_broker_queues(tis, "finalize") == MAX_SHARDS
    lanes = len(QUEUES) + 1  # the brokers' queues and default: three tasks each at most
    assert sum(tis.values()) <= 2 * MAX_SHARDS + 7 + 3 * lanes

    _expire_the_oldest_segment(cluster)
    real = {"dry_run": False}  # dag.test() runs are manual triggers: dry unless told otherwise
    assert run(cluster, "retention_expiry", run_conf=real, logical_date=LOGICAL_DATE) == "success"
    kept = live_segments(cluster)
    assert kept == {key: segments[1:] for key, segments in copied.items()}
    assert on_broker_queues(task_instances(cluster, "retention_expiry"), "expire") == MAX_SHARDS

    for broker in cluster.brokers:  # the topic is deleted from the cluster
        for p in range(PARTITIONS):
            shutil.rmtree(cluster.log_dirs[broker] / f"clicks-{p}")
    assert run(cluster, "remote_partition_removal", run_conf=real) == "success"
    assert {topic for topic, _ in live_segments(cluster)} == {"orders"}
    keys = open_objects(cluster.settings).list()
    assert keys and not [k for k in keys if k.startswith("clicks-")]
    removal = task_instances(cluster, "remote_partition_removal")
    assert removal[("remove", "default")] == MAX_SHARDS  # the bucket only: any worker


def _expire_the_oldest_segment(cluster: ClusterLogs) -> None:
    """retention.ms such that, as of LOGICAL_DATE, each partition's first remote segment
    has expired and its second has not (all partitions share the template's timestamps)."""
    log_ = cluster.leader_log("orders", 0)
    first, second = (s.largest_timestamp() for s in log_.segments()[:2])
    now_ms = int(LOGICAL_DATE.timestamp() * 1000)
    retention_ms = now_ms - (first + second) // 2
    store = open_store(cluster.settings)
    for name, topic_id in cluster.topics.items():
        store.register_topic(name, topic_id, actor="test", now_ms=0, retention_ms=retention_ms)
