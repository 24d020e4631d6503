"""What a KRaft cluster knows about topics, partitions, configs and brokers: Kafka's MetadataImage.

The public image is keyed by topic name, as operators and the rest of tierflow speak of topics.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PartitionImage:
    """One partition as the controller last recorded it (Kafka's PartitionRegistration)."""

    topic: str
    partition: int
    leader: int  # -1 when the partition has no leader
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: str  # Kafka's 22-character base64 form, as in partition.metadata


@dataclass(frozen=True)
class BrokerImage:
    """A broker's last registration: KRaft fences a broker that stops heartbeating."""

    broker_id: int
    broker_epoch: int
    fenced: bool
    in_controlled_shutdown: bool
    rack: str | None


@dataclass
class MetadataImage:
    """The replayed state; ``configs`` holds only explicit topic overrides (topic -> key -> value).

    ``end_offset`` is the metadata log offset the image is as of (the next offset to replay).
    """

    topics: dict[str, TopicImage]
    partitions: dict[tuple[str, int], PartitionImage]
    configs: dict[str, dict[str, str]]
    brokers: dict[int, BrokerImage] = field(default_factory=dict)
    end_offset: int = 0

    def topic_partitions(self, topic: str) -> list[PartitionImage]:
        """A topic's partitions by partition number."""
        return sorted(
            (p for (name, _), p in self.partitions.items() if name == topic),
            key=lambda p: p.partition,
        )
