"""tierflow's kafka-local layout writes what a broker's own LocalTieredStorage writes, and reads it.

A real broker with ``remote.storage.enable=true`` tiers a topic's rolled segments itself into
Kafka's LocalTieredStorage (``rsm.config.dir``). tierflow then copies the same local segments,
read from the broker's log dir the way ``tierflow copy`` reads them (``inspect_segment``), with
TIERFLOW_STORAGE_LAYOUT=kafka-local into a second directory bucket, under the segment ids the
broker published to ``__remote_log_metadata``. Every object tierflow wrote has the relative key
of the broker's file and its bytes, file by file, for at least three segments: the ``.log``,
the ``.index`` and ``.timeindex`` (the broker copies them trimmed at roll; tierflow uploads
their valid entries), the ``.txnindex`` where the segment has one (the one with an aborted
transaction) and none where it has not, the ``.snapshot`` (the producer snapshot at the next
segment's base offset), and the ``.leader_epoch_checkpoint``.

The ``.leader_epoch_checkpoint`` is the one file a broker does not copy: it writes it from its
in-memory leader-epoch cache (``RemoteLogManager.getLeaderEpochEntries(log, -1, next segment's
base offset)``), while tierflow reads the ``leader-epoch-checkpoint`` file the broker flushes
from that cache. Kafka 4.1's LeaderEpochFileCache writes the file at once when it assigns an
epoch, but only later (a scheduled flush) when it truncates the cache from the start (the log
start offset moved) or from the end (a new leader truncated the log): in that window the two
can differ, for a reason outside tierflow. Here there is one leader and one epoch, assigned
before the first record, so the file is current and the test asserts byte equality for every
file; if it ever fails on that file alone, look for a truncation not yet flushed, not at the
layout.

Then tierflow reads the broker's bucket: a ranged fetch of each ``.log``, each index, and a
missing ``.txnindex`` as RemoteResourceNotFoundError, as LocalTieredStorage answers. The facts
tierflow would publish for each segment (size, leader epochs, whether the transaction index is
empty) are the broker's, too.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.structs import TopicPartition

from dev.kafka_broker import KafkaCluster
from tests.support.kafka_broker import create_topic
from tierflow.config import Settings
from tierflow.kafka.log_dir import LogDir, PartitionLog
from tierflow.kafka.offset_index import OffsetIndex
from tierflow.kafka.remote_log_metadata.records import (
    RemoteLogMetadata,
    SegmentMetadata,
    SegmentUpdate,
)
from tierflow.kafka.remote_log_metadata.serde import deserialize
from tierflow.kafka.time_index import TimeIndex
from tierflow.lifecycle.copy.candidates import CopyCandidate
from tierflow.lifecycle.copy.segment_facts import SegmentFacts, inspect_segment
from tierflow.rsm import (
    IndexType,
    RemoteResourceNotFoundError,
    RemoteSegment,
    RemoteStorageManager,
)
from tierflow.storage.factory import open_remote_storage

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
TOPIC = "kafka-local-layout"
METADATA_TOPIC = "__remote_log_metadata"
METADATA_PARTITIONS = 5  # dev.kafka_broker.tiering's default
FINISHED = 1
SEGMENTS = 3
KIB = 1024
MIB = 1024 * KIB
SUFFIXES = ("log", "index", "timeindex", "txnindex", "snapshot", "leader_epoch_checkpoint")


@dataclass(frozen=True)
class Tiered:
    """The broker's copies (its ``rsm.config.dir`` and the segments it finished) and
    tierflow's settings for a kafka-local bucket of its own."""

    broker_dir: Path
    log: PartitionLog
    segments: list[SegmentMetadata]
    settings: Settings

    def remote(self, metadata: SegmentMetadata) -> RemoteSegment:
        return RemoteSegment(
            TOPIC,
            metadata.partition.topic_id,
            0,
            metadata.segment_id,
            metadata.start_offset,
            metadata.end_offset,
        )


@pytest.fixture(scope="module")
def tiered(tiering_broker: KafkaCluster, tmp_path_factory: pytest.TempPathFactory) -> Tiered:
    topic_id = create_topic(
        tiering_broker, TOPIC, remote_storage_enable="true", segment_bytes=str(MIB)
    )
    _produce(tiering_broker)
    segments = _until_finished(tiering_broker, topic_id)
    node = tiering_broker.nodes[0]
    base = tmp_path_factory.mktemp("tierflow-kafka-local")
    settings = Settings.embedded(
        base,
        remote_storage=str(base / "ours"),
        storage_layout="kafka-local",
        log_dirs=(node.log_dir,),
    )
    log = LogDir(node.log_dir).partition(TOPIC, 0)
    return Tiered(node.home.parent / "remote", log, segments, settings)


def _produce(cluster: KafkaCluster) -> None:
    """1.5 MiB of idempotent records, an aborted and a committed transaction (so one segment
    has a ``.txnindex`` and the snapshots hold two producers), then 3 MiB more: four or more
    segments roll."""
    plain = KafkaProducer(bootstrap_servers=cluster.bootstrap, linger_ms=5)
    _send(plain, 1536)
    for commit in (False, True):
        tx = KafkaProducer(bootstrap_servers=cluster.bootstrap, transactional_id="kafka-local")
        tx.init_transactions()
        tx.begin_transaction()
        _send(tx, 50)
        tx.commit_transaction() if commit else tx.abort_transaction()
        tx.close()
    _send(plain, 3 * 1024)
    plain.close()


def _send(producer: KafkaProducer, count: int) -> None:
    for n in range(count):
        producer.send(TOPIC, os.urandom(KIB), f"k{n}".encode(), partition=0)
    producer.flush()


def _until_finished(
    cluster: KafkaCluster, topic_id: str, timeout_s: float = 120
) -> list[SegmentMetadata]:
    """The topic's segments the broker finished copying (each file of them is in place),
    by start offset, once there are at least SEGMENTS of them."""
    deadline = time.monotonic() + timeout_s
    while True:
        started: dict[str, SegmentMetadata] = {}
        finished: set[str] = set()
        for record in _metadata_records(cluster):
            if record.partition.topic_id != topic_id:
                continue
            if isinstance(record, SegmentMetadata):
                started[record.segment_id] = record
            elif isinstance(record, SegmentUpdate) and record.state == FINISHED:
                finished.add(record.segment_id)
        done = sorted((started[s] for s in finished), key=lambda s: s.start_offset)
        if len(done) >= SEGMENTS:
            return done
        assert time.monotonic() < deadline, f"the broker finished {len(done)} segment(s)"
        time.sleep(1)


def _metadata_records(cluster: KafkaCluster) -> list[RemoteLogMetadata]:
    consumer = KafkaConsumer(
        bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, consumer_timeout_ms=3000
    )
    consumer.assign([TopicPartition(METADATA_TOPIC, p) for p in range(METADATA_PARTITIONS)])
    consumer.seek_to_beginning()
    found = [deserialize(m.value) for m in consumer]
    consumer.close()
    return found


def _facts(tiered: Tiered, metadata: SegmentMetadata) -> SegmentFacts:
    """What ``tierflow copy`` reads of the local segment the broker copied."""
    (segment,) = [s for s in tiered.log.segments() if s.base_offset == metadata.start_offset]
    return inspect_segment(tiered.log, CopyCandidate(segment, metadata.end_offset + 1))


def _files(root: Path, metadata: SegmentMetadata) -> dict[str, bytes]:
    """The segment's files under a LocalTieredStorage directory, by path relative to it."""
    stem = f"{metadata.start_offset:020d}-{metadata.segment_id}."
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob(f"{stem}*")
        if p.is_file()
    }


def test_tierflow_writes_the_brokers_objects_byte_for_byte(tiered: Tiered) -> None:
    rsm = open_remote_storage(tiered.settings)
    ours = Path(tiered.settings.remote_storage)
    with_txn = 0
    for metadata in tiered.segments:
        written = rsm.copy_log_segment_data(tiered.remote(metadata), _facts(tiered, metadata).data)
        broker = _files(tiered.broker_dir, metadata)
        assert {o.key for o in written} == set(broker), metadata.segment_id
        mine = _files(ours, metadata)
        for key, data in broker.items():
            assert mine[key] == data, f"{key}: {len(mine[key])} bytes, the broker's {len(data)}"
        with_txn += any(key.endswith(".txnindex") for key in broker)
    assert len(tiered.segments) >= SEGMENTS
    assert with_txn == 1, "exactly one segment holds the aborted transaction"


def test_the_keys_are_local_tiered_storages(tiered: Tiered) -> None:
    metadata = tiered.segments[0]
    rsm = open_remote_storage(tiered.settings)
    topic_id = metadata.partition.topic_id
    assert rsm.object_keys(tiered.remote(metadata)) == [
        f"kafka-tiered-storage/{TOPIC}-0-{topic_id}/"
        f"{metadata.start_offset:020d}-{metadata.segment_id}.{suffix}"
        for suffix in SUFFIXES
    ]


def test_tierflow_reads_what_the_broker_wrote(tiered: Tiered) -> None:
    rsm = open_remote_storage(tiered.settings.updated(remote_storage=str(tiered.broker_dir)))
    for metadata in tiered.segments:
        segment, facts = tiered.remote(metadata), _facts(tiered, metadata)
        local = facts.data.log_segment.read_bytes()
        assert rsm.fetch_log_segment(segment, 100, 4195) == local[100:4196]
        assert b"".join(rsm.iter_log_segment(segment)) == local
        found = _files(tiered.broker_dir, metadata)
        broker = {key.rsplit(".", 1)[1]: data for key, data in found.items()}
        for index_type, suffix in [
            (IndexType.OFFSET, "index"),
            (IndexType.TIMESTAMP, "timeindex"),
            (IndexType.PRODUCER_SNAPSHOT, "snapshot"),
            (IndexType.LEADER_EPOCH, "leader_epoch_checkpoint"),
        ]:
            assert rsm.fetch_index(segment, index_type) == broker[suffix]
        _check_transaction_index(rsm, segment, broker.get("txnindex"))
        _check_indexes(rsm, segment, len(local))


def _check_indexes(rsm: RemoteStorageManager, segment: RemoteSegment, log_size: int) -> None:
    """The broker's offset and time indexes pass the checks tierflow's read path makes."""
    source = segment.describe()
    offsets = OffsetIndex.from_bytes(
        rsm.fetch_index(segment, IndexType.OFFSET),
        segment.start_offset,
        source=source,
        log_size=log_size,
    )
    times = TimeIndex.from_bytes(
        rsm.fetch_index(segment, IndexType.TIMESTAMP),
        segment.start_offset,
        source=source,
        last_offset=segment.end_offset,
    )
    assert offsets.entries and times.entries, "a 1 MiB segment has index entries"


def _check_transaction_index(
    rsm: RemoteStorageManager, segment: RemoteSegment, broker: bytes | None
) -> None:
    """LocalTieredStorage answers a missing (optional) ``.txnindex`` with not-found."""
    if broker is None:
        with pytest.raises(RemoteResourceNotFoundError):
            rsm.fetch_index(segment, IndexType.TRANSACTION)
    else:
        assert rsm.fetch_index(segment, IndexType.TRANSACTION) == broker


def test_what_tierflow_would_publish_is_what_the_broker_published(tiered: Tiered) -> None:
    for metadata in tiered.segments:
        facts = _facts(tiered, metadata)
        assert facts.size_in_bytes == metadata.size_in_bytes
        assert tuple((e.epoch, e.start_offset) for e in facts.leader_epochs) == (
            metadata.leader_epochs
        )
        assert facts.txn_index_empty == metadata.txn_index_empty


def test_the_log_end_offset_read_from_the_index_is_the_brokers(
    tiered: Tiered, tiering_broker: KafkaCluster
) -> None:
    """The active segment's last offset starts at its offset index's last entry (the live,
    preallocated index), as the broker's LogSegment.readNextOffset does; the log end that
    gives is the one the broker answers."""
    active = tiered.log.segments()[-1]
    assert OffsetIndex.last_entry(active.index_path, active.base_offset) is not None
    consumer = KafkaConsumer(bootstrap_servers=tiering_broker.bootstrap)
    partition = TopicPartition(TOPIC, 0)
    brokers = consumer.end_offsets([partition])[partition]
    consumer.close()
    assert tiered.log.log_end_offset() == brokers
