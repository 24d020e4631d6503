"""The generated cluster of tests.support.cluster_logs is what the cluster model reads it as:
leaders spread over three brokers, lagging followers never chosen, a roll makes exactly one more
segment copyable on the leader only, and a cloned first copy matches a real one's shape."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.support.cloned_copy import clone_copies, copy_in_process
from tests.support.cluster_logs import ClusterLogs, build_cluster, roll
from tests.support.tiered import eligible
from tierflow.cluster.leaders import leader_logs
from tierflow.kafka.log_dir import LogDir
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.runtime import open_store
from tierflow.tasks.segment_copy import COPY
from tierflow.tasks.staged import plan_shards

TOPICS = ("orders", "clicks")
PARTITIONS = 12


@pytest.fixture
def cluster(tmp_path: Path) -> ClusterLogs:
    return build_cluster(tmp_path, topics=TOPICS, partitions=PARTITIONS)


def test_inferred_leaders_are_the_builders_and_spread_over_three_brokers(cluster) -> None:
    found = {(ll.log.topic, ll.log.partition): ll.broker for ll in leader_logs(cluster.settings)}
    assert found == {(t, p): cluster.leader_of(p) for t, p in cluster.partition_keys()}
    assert set(Counter(found.values())) == {1, 2, 3}
    for partition in range(PARTITIONS):
        _, follower = cluster.replicas(partition)
        follower_log = LogDir(cluster.log_dirs[follower]).partition("orders", partition)
        leader_log = cluster.leader_log("orders", partition)
        if cluster.lagging(partition):  # shorter log, lower high watermark
            assert len(follower_log.segments()) == len(leader_log.segments()) - 1
            assert follower_log.high_watermark() < leader_log.high_watermark()
        assert len(eligible(leader_log)) == 1  # every rolled segment; never the active one


def test_a_roll_makes_one_more_segment_copyable_on_the_leader_only(cluster) -> None:
    before = {key: eligible(cluster.leader_log(*key)) for key in cluster.partition_keys()}
    assert roll(cluster, [("orders", 0), ("clicks", 5)]) == 2
    after = {key: eligible(cluster.leader_log(*key)) for key in cluster.partition_keys()}
    changed = {key for key in after if after[key] != before[key]}
    assert changed == {("orders", 0), ("clicks", 5)}
    for key in changed:
        assert after[key][: len(before[key])] == before[key] and len(after[key]) == 2
    found = {(ll.log.topic, ll.log.partition): ll.broker for ll in leader_logs(cluster.settings)}
    assert found == {(t, p): cluster.leader_of(p) for t, p in cluster.partition_keys()}
    with pytest.raises(FileExistsError):
        roll(cluster, [("orders", 0)])


def test_cloned_copies_are_finished_segments_with_objects_naming_their_partition(
    cluster,
) -> None:
    settings = cluster.settings
    store = open_store(settings)
    for name, topic_id in cluster.topics.items():
        store.register_topic(name, topic_id, actor="test", now_ms=0, remote_storage_enable=True)
    copied = copy_in_process(settings, {"orders"})
    assert (copied["partitions"], copied["segments"]) == (PARTITIONS, PARTITIONS)
    assert clone_copies(store, settings, source="orders", targets=["clicks"]) == PARTITIONS
    clicks = store.topic("clicks")
    for partition in range(PARTITIONS):
        (segment,) = store.segments(clicks.topic_id, partition)
        assert segment.state == S.COPY_SEGMENT_FINISHED
        assert (
            store.partition(clicks.topic_id, partition).highest_remote_offset == segment.end_offset
        )
        objects = store.segment_objects(segment.segment_id)
        assert {o.kind for o in objects} == {"log", "indexes", "rsm-manifest"}
        (manifest,) = [o for o in objects if o.kind == "rsm-manifest"]
        found = json.loads((Path(settings.remote_storage) / manifest.key).read_bytes())
        ident = found["remoteLogSegmentMetadata"]["remoteLogSegmentId"]
        assert ident["id"] == segment.segment_id
        assert ident["topicIdPartition"]["topicPartition"] == {
            "topic": "clicks",
            "partition": partition,
        }
    assert not plan_shards(COPY, {}, settings)  # nothing left to copy anywhere
