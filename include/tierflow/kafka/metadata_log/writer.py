"""Writes ``__cluster_metadata-0`` directories shaped like a KRaft controller's (tests, demos).

Batches are uncompressed v2 batches stamped with the Raft epoch, each epoch opens with a
LEADER_CHANGE control record, and snapshots are ``<endOffset>-<epoch>.checkpoint`` files framed
by SNAPSHOT_HEADER and SNAPSHOT_FOOTER control records, as Kafka's Raft client writes them.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka.protocol.api_data import ApiData
from kafka.protocol.schemas.fields.codecs.types import UnsignedVarInt32

from tierflow.kafka.api_message import frame_header
from tierflow.kafka.batch_builder import Record, build_batch, build_raft_control_batch
from tierflow.kafka.metadata_log import records as r
from tierflow.kafka.metadata_log.image import MetadataImage, PartitionImage
from tierflow.kafka.metadata_log.reader import CHECKPOINT_SUFFIX
from tierflow.kafka.naming import LOG_SUFFIX, offset_prefix
from tierflow.kafka.uuid import from_kafka_uuid

LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER = 2, 3, 4
UNASSIGNED_DIRECTORY = uuid.UUID(int=0)  # Kafka's DirectoryId.UNASSIGNED
METADATA_VERSION_4_0 = 25  # MetadataVersion 4.0-IV3, as in the Kafka 4.0 sample

# A record as the writer takes it: a body, or the apiKey of a fieldless one (NoOp, EndTransaction).
Writable = ApiData | int


def topic_record(name: str, topic_id: str) -> ApiData:
    return r.TopicRecord(version=0, name=name, topic_id=from_kafka_uuid(topic_id))


@dataclass(frozen=True)
class LeaderAndIsr:
    """Kafka's LeaderAndIsr: who leads a partition, in which epochs, and the in-sync replicas.
    None: the first replica leads, and every replica is in sync."""

    leader: int | None = None
    leader_epoch: int = 0
    isr: Sequence[int] | None = None
    partition_epoch: int = 0


def partition_record(
    topic_id: str,
    partition: int,
    replicas: Sequence[int],
    leadership: LeaderAndIsr = LeaderAndIsr(),
    *,
    version: int = 2,
    elr: Sequence[int] | None = None,
    last_known_elr: Sequence[int] | None = None,
) -> ApiData:
    """A new partition, led as ``leadership`` says; ``elr`` and ``last_known_elr`` (KIP-966,
    v2) are not written when None."""
    isr, leader = leadership.isr, leadership.leader
    return r.PartitionRecord(
        **_partition_key(topic_id, partition, version),
        replicas=list(replicas),
        isr=list(replicas if isr is None else isr),
        removing_replicas=[],
        adding_replicas=[],
        leader=replicas[0] if leader is None else leader,
        leader_epoch=leadership.leader_epoch,
        partition_epoch=leadership.partition_epoch,
        directories=[UNASSIGNED_DIRECTORY] * len(replicas),
        **_elr_fields(elr, last_known_elr),
    )


def partition_change(
    topic_id: str,
    partition: int,
    *,
    leader: int = r.NO_LEADER_CHANGE,
    isr: Sequence[int] | None = None,
    replicas: Sequence[int] | None = None,
    version: int = 2,
    elr: Sequence[int] | None = None,
    last_known_elr: Sequence[int] | None = None,
) -> ApiData:
    """A delta: fields left at None (and ``leader`` at NO_LEADER_CHANGE) are not written."""
    return r.PartitionChangeRecord(
        **_partition_key(topic_id, partition, version),
        leader=leader,
        isr=None if isr is None else list(isr),
        replicas=None if replicas is None else list(replicas),
        **_elr_fields(elr, last_known_elr),
    )


def _elr_fields(elr: Sequence[int] | None, last_known: Sequence[int] | None) -> dict[str, object]:
    """KIP-966's tagged fields, as lists (None: not written, which reads as unchanged/none)."""
    return {
        "eligible_leader_replicas": None if elr is None else list(elr),
        "last_known_elr": None if last_known is None else list(last_known),
    }


def _partition_key(topic_id: str, partition: int, version: int) -> dict[str, object]:
    """The fields that name the partition in both PartitionRecord and PartitionChangeRecord."""
    return {"version": version, "partition_id": partition, "topic_id": from_kafka_uuid(topic_id)}


def remove_topic_record(topic_id: str) -> ApiData:
    return r.RemoveTopicRecord(version=0, topic_id=from_kafka_uuid(topic_id))


def topic_config_record(topic: str, key: str, value: str | None) -> ApiData:
    """A topic config override; ``value=None`` deletes the key."""
    return r.ConfigRecord(
        version=0, resource_type=r.RESOURCE_TOPIC, resource_name=topic, name=key, value=value
    )


def register_broker_record(broker_id: int, broker_epoch: int, *, fenced: bool = True) -> ApiData:
    return r.RegisterBrokerRecord(
        version=3,
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=broker_id + 1),
        broker_epoch=broker_epoch,
        end_points=[],
        features=[],
        rack=None,
        fenced=fenced,
    )


def broker_change_record(
    broker_id: int,
    broker_epoch: int,
    *,
    fenced: bool | None = None,
    in_controlled_shutdown: bool = False,
) -> ApiData:
    """BrokerRegistrationChangeRecord v1: fence (True), unfence (False) or neither (None), and
    whether the broker entered controlled shutdown."""
    return r.BrokerRegistrationChangeRecord(
        version=1,
        broker_id=broker_id,
        broker_epoch=broker_epoch,
        fenced=0 if fenced is None else (1 if fenced else -1),
        in_controlled_shutdown=1 if in_controlled_shutdown else 0,
    )


def metadata_version_record(level: int = METADATA_VERSION_4_0) -> ApiData:
    return r.FeatureLevelRecord(version=0, name="metadata.version", feature_level=level)


def _value(record: Writable) -> bytes:
    if isinstance(record, int):
        return frame_header(record, 0) + r.EMPTY_BODY
    return r.encode_value(record)


def _leader_change_value(leader: int, voters: Sequence[int]) -> bytes:
    """LeaderChangeMessage v0: version, leader, voters, granting voters (flexible)."""
    voter_list = UnsignedVarInt32.encode(len(voters) + 1) + b"".join(
        struct.pack(">i", v) + b"\x00" for v in voters
    )
    return struct.pack(">hi", 0, leader) + voter_list + voter_list + b"\x00"


class MetadataLogWriter:
    """Appends batches of metadata records to a metadata log directory, rolling on request."""

    def __init__(
        self, partition_dir: Path, *, raft_epoch: int = 1, leader: int = 1, timestamp: int = 0
    ) -> None:
        self.partition_dir = Path(partition_dir)
        self.partition_dir.mkdir(parents=True, exist_ok=True)
        self.raft_epoch = raft_epoch
        self.timestamp = timestamp or 1_700_000_000_000
        self.next_offset = 0
        self._segment = self._segment_path(0)
        self._segment.touch()
        self.new_leader(leader, epoch=raft_epoch)

    def _segment_path(self, base_offset: int) -> Path:
        return self.partition_dir / f"{offset_prefix(base_offset)}{LOG_SUFFIX}"

    def _write(self, data: bytes, count: int) -> int:
        base = self.next_offset
        with self._segment.open("ab") as f:
            f.write(data)
        self.next_offset += count
        self.timestamp += 1
        return base

    def new_leader(self, leader: int, *, epoch: int, voters: Sequence[int] = (1,)) -> int:
        """A LEADER_CHANGE control record opening Raft epoch ``epoch``."""
        self.raft_epoch = epoch
        batch = build_raft_control_batch(
            base_offset=self.next_offset,
            leader_epoch=epoch,
            control_type=LEADER_CHANGE,
            value=_leader_change_value(leader, voters),
            timestamp=self.timestamp,
        )
        return self._write(batch, 1)

    def append(self, *records: Writable) -> int:
        """One batch holding ``records``; returns its base offset."""
        values = [Record(key=None, value=_value(x), timestamp=self.timestamp) for x in records]
        batch = build_batch(values, base_offset=self.next_offset, leader_epoch=self.raft_epoch)
        return self._write(batch, len(values))

    def transaction(self, records: Iterable[Writable], *, name: str, abort: bool = False) -> int:
        """Records enclosed in Begin/End (or Abort) TransactionRecords, one batch each."""
        first = self.append(r.BeginTransactionRecord(version=0, name=name))
        for record in records:
            self.append(record)
        self.append(
            r.AbortTransactionRecord(version=0, reason="Controller failover")
            if abort
            else r.END_TRANSACTION_RECORD
        )
        return first

    def roll(self) -> Path:
        """Later batches go to a new segment named after the next offset."""
        self._segment = self._segment_path(self.next_offset)
        self._segment.touch()
        return self._segment

    def snapshot(self, image: MetadataImage) -> Path:
        """``<next offset>-<epoch>.checkpoint`` holding ``image`` (which the caller replayed)."""
        return write_snapshot(
            self.partition_dir, image, end_offset=self.next_offset, epoch=self.raft_epoch
        )


def image_records(image: MetadataImage) -> list[ApiData]:
    """The records that rebuild ``image``, in the order Kafka's snapshot writer emits them."""
    out: list[ApiData] = [metadata_version_record()]
    out += [
        register_broker_record(b.broker_id, b.broker_epoch, fenced=b.fenced)
        for b in image.brokers.values()
    ]
    for name, topic in sorted(image.topics.items()):
        out.append(topic_record(name, topic.topic_id))
        out += [topic_config_record(name, k, v) for k, v in image.configs.get(name, {}).items()]
        out += [_snapshot_partition(topic.topic_id, p) for p in image.topic_partitions(name)]
    return out


def _snapshot_partition(topic_id: str, p: PartitionImage) -> ApiData:
    return partition_record(
        topic_id,
        p.partition,
        p.replicas,
        LeaderAndIsr(p.leader, p.leader_epoch, p.isr, p.partition_epoch),
        elr=p.elr or None,
        last_known_elr=p.last_known_elr or None,
    )


def write_snapshot(
    partition_dir: Path, image: MetadataImage, *, end_offset: int, epoch: int
) -> Path:
    """A complete snapshot file; its record offsets are local to the file, starting at 0."""
    timestamp = 1_700_000_000_000
    header = build_raft_control_batch(
        base_offset=0,
        leader_epoch=epoch,
        control_type=SNAPSHOT_HEADER,
        value=struct.pack(">hq", 0, timestamp) + b"\x00",
        timestamp=timestamp,
    )
    values = [Record(key=None, value=_value(x), timestamp=timestamp) for x in image_records(image)]
    data = build_batch(values, base_offset=1, leader_epoch=epoch)
    footer = build_raft_control_batch(
        base_offset=1 + len(values),
        leader_epoch=epoch,
        control_type=SNAPSHOT_FOOTER,
        value=struct.pack(">h", 0) + b"\x00",
        timestamp=timestamp,
    )
    path = Path(partition_dir) / f"{offset_prefix(end_offset)}-{epoch:010d}{CHECKPOINT_SUFFIX}"
    path.write_bytes(header + data + footer)
    return path
