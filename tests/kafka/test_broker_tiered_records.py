"""What a broker that tiers itself writes to ``__remote_log_metadata``, read by tierflow.

A real broker with ``remote.storage.enable=true`` on a topic copies its rolled segments with
its own RemoteLogManager (into Kafka's LocalTieredStorage) and publishes each transition with
its topic-based metadata manager. Every record it wrote is read back with tierflow's serde
(none refused), found in the metadata partition tierflow's partitioner names, and tells the
broker's story: each segment COPY_SEGMENT_STARTED then COPY_SEGMENT_FINISHED, contiguous from
offset 0, its leader epochs from its base offset, its size that of the object the broker
wrote. This is what following a broker-owned topic reads.
"""

from __future__ import annotations

import itertools
import os
import time
from collections import defaultdict

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

from dev.kafka_broker import KafkaCluster
from tests.support.kafka_broker import create_topic
from tierflow.kafka.remote_log_metadata.partitioner import metadata_partition
from tierflow.kafka.remote_log_metadata.records import RemoteLogMetadata, SegmentMetadata
from tierflow.kafka.remote_log_metadata.serde import deserialize

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
TOPIC = "tiered-by-kafka"
METADATA_TOPIC = "__remote_log_metadata"
METADATA_PARTITIONS = 5  # dev.kafka_broker.tiering's default
STARTED, FINISHED = 0, 1
MIB = 1024 * 1024


@pytest.fixture(scope="module")
def published(tiering_broker: KafkaCluster) -> tuple[str, list[tuple[int, RemoteLogMetadata]]]:
    """The topic's id, and every record of the metadata topic with its partition, once the
    broker has finished copying at least three segments."""
    topic_id = create_topic(
        tiering_broker, TOPIC, remote_storage_enable="true", segment_bytes=str(MIB)
    )
    producer = KafkaProducer(bootstrap_servers=tiering_broker.bootstrap, linger_ms=5)
    for n in range(4 * 1024):  # 4 MiB of 1 KiB values: three segments roll, the fourth is open
        producer.send(TOPIC, os.urandom(1024), f"k{n}".encode(), partition=0)
    producer.flush()
    producer.close()
    return topic_id, _until_finished(tiering_broker, topic_id, segments=3)


def _until_finished(
    cluster: KafkaCluster, topic_id: str, *, segments: int, timeout_s: float = 120
) -> list[tuple[int, RemoteLogMetadata]]:
    deadline = time.monotonic() + timeout_s
    while True:
        found = _read_all(cluster)
        finished = [r for _, r in found if r.partition.topic_id == topic_id and r.state == FINISHED]
        if len(finished) >= segments or time.monotonic() > deadline:
            return found
        time.sleep(1)


def _read_all(cluster: KafkaCluster) -> list[tuple[int, RemoteLogMetadata]]:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000
    )
    consumer.assign([TopicPartition(METADATA_TOPIC, p) for p in range(METADATA_PARTITIONS)])
    consumer.seek_to_beginning()
    found = [(m.partition, deserialize(m.value)) for m in consumer]
    consumer.close()
    return found


def test_every_record_the_broker_wrote_reads_back_in_the_partition_kafka_chose(
    published: tuple[str, list[tuple[int, RemoteLogMetadata]]],
) -> None:
    topic_id, records = published
    ours = [(p, r) for p, r in records if r.partition.topic_id == topic_id]
    assert ours, "the broker published nothing for the topic"
    assert {r.partition.topic for _, r in ours} == {TOPIC}
    assert {p for p, _ in ours} == {metadata_partition(topic_id, 0, METADATA_PARTITIONS)}


def test_each_segment_started_then_finished_contiguous_from_zero(
    published: tuple[str, list[tuple[int, RemoteLogMetadata]]], tiering_broker: KafkaCluster
) -> None:
    topic_id, records = published
    states: dict[str, list[int]] = defaultdict(list)
    segments: dict[str, SegmentMetadata] = {}
    for _, record in records:
        if record.partition.topic_id != topic_id:
            continue
        states[record.segment_id].append(record.state)  # type: ignore[union-attr]
        if isinstance(record, SegmentMetadata):
            segments[record.segment_id] = record
    finished = sorted(
        (segments[s] for s, seen in states.items() if seen[:2] == [STARTED, FINISHED]),
        key=lambda s: s.start_offset,
    )
    assert len(finished) >= 3 and finished[0].start_offset == 0
    for before, after in itertools.pairwise(finished):
        assert after.start_offset == before.end_offset + 1
    for segment in finished:
        assert segment.leader_epochs == ((0, segment.start_offset),)
        assert segment.broker_id == 1
        assert segment.size_in_bytes == _remote_log_size(tiering_broker, segment)


def _remote_log_size(cluster: KafkaCluster, segment: SegmentMetadata) -> int:
    """The size of the ``.log`` the broker copied into LocalTieredStorage for the segment."""
    remote = cluster.nodes[0].home.parent / "remote"
    name = f"{segment.start_offset:020d}-{segment.segment_id}.log"
    found = list(remote.rglob(name))
    assert len(found) == 1, f"{name} under {remote}: {found}"
    return found[0].stat().st_size
