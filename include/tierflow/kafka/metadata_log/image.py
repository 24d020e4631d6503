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
    # KIP-966 (Kafka 4): replicas that may still lead with the ISR empty, and the last leader
    # the controller remembers once the partition lost every one of them.
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


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

    def broker_active(self, broker_id: int) -> bool:
        """Whether the controller may elect the broker (ClusterControlManager.isActive):
        registered, unfenced and not in controlled shutdown."""
        broker = self.brokers.get(broker_id)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

    def topic_partitions(self, topic: str) -> list[PartitionImage]:
        """A topic's partitions by partition number."""
        return sorted(
            (p for (name, _), p in self.partitions.items() if name == topic),
            key=lambda p: p.partition,
        )
