"""Replaying metadata records into state, with the rules of Kafka's TopicsDelta,
PartitionRegistration.merge, ConfigurationsDelta and ClusterDelta.

State is keyed by topic id, as Kafka's is: a name can be reused after a deletion with a new
id, and PartitionRecords name the topic only by id.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka.protocol.api_data import ApiData

from tierflow.kafka.metadata_log import records as r
from tierflow.kafka.metadata_log.image import BrokerImage, MetadataImage, PartitionImage, TopicImage
from tierflow.kafka.uuid import to_kafka_uuid

log = logging.getLogger(__name__)


class ReplayError(ValueError):
    """A record that cannot be applied to the state built so far."""


@dataclass
class ReplayState:
    """Topics, partitions and configs as the records so far leave them."""

    topic_names: dict[uuid.UUID, str] = field(default_factory=dict)
    partitions: dict[tuple[uuid.UUID, int], PartitionImage] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    brokers: dict[int, BrokerImage] = field(default_factory=dict)

    def apply(self, record: ApiData) -> None:
        handler = _HANDLERS.get(type(record))
        if handler is not None:
            handler(self, record)

    def image(self, end_offset: int) -> MetadataImage:
        topics = {
            name: TopicImage(name, to_kafka_uuid(topic_id))
            for topic_id, name in self.topic_names.items()
        }
        partitions = {(p.topic, p.partition): p for p in self.partitions.values()}
        configs = {name: dict(values) for name, values in self.configs.items() if values}
        return MetadataImage(topics, partitions, configs, dict(self.brokers), end_offset)


def _topic(state: ReplayState, record: ApiData) -> None:
    state.topic_names[record.topic_id] = record.name


def _partition(state: ReplayState, record: ApiData) -> None:
    """A PartitionRecord is the whole partition state; it replaces what was there."""
    if record.topic_id not in state.topic_names:
        raise ReplayError(f"PartitionRecord for unknown topic id {to_kafka_uuid(record.topic_id)}")
    state.partitions[(record.topic_id, record.partition_id)] = PartitionImage(
        state.topic_names[record.topic_id],
        record.partition_id,
        leader=record.leader,
        leader_epoch=record.leader_epoch,
        partition_epoch=record.partition_epoch,
        replicas=tuple(record.replicas),
        isr=tuple(record.isr),
        elr=tuple(record.eligible_leader_replicas or ()),  # null before v2: none
        last_known_elr=tuple(record.last_known_elr or ()),
    )


def _partition_change(state: ReplayState, record: ApiData) -> None:
    """Kafka's PartitionRegistration.merge: absent fields are unchanged; any Leader value other
    than NO_LEADER_CHANGE (-2), even the same broker or -1, bumps the leader epoch; the
    partition epoch bumps on every change."""
    key = (record.topic_id, record.partition_id)
    current = state.partitions.get(key)
    if current is None:
        # Kafka's controller never writes this; an offline reader warns rather than guesses.
        log.warning(
            "PartitionChangeRecord for unknown partition %s-%d ignored",
            to_kafka_uuid(record.topic_id),
            record.partition_id,
        )
        return
    changes: dict[str, object] = {"partition_epoch": current.partition_epoch + 1}
    if record.leader != r.NO_LEADER_CHANGE:
        changes.update(leader=record.leader, leader_epoch=current.leader_epoch + 1)
    lists = {
        "replicas": record.replicas,
        "isr": record.isr,
        "elr": record.eligible_leader_replicas,
        "last_known_elr": record.last_known_elr,
    }
    changes.update({name: tuple(value) for name, value in lists.items() if value is not None})
    state.partitions[key] = dataclasses.replace(current, **changes)


def _remove_topic(state: ReplayState, record: ApiData) -> None:
    """Drops the topic, its partitions and its configs (TopicsDelta, ConfigurationsDelta)."""
    name = state.topic_names.pop(record.topic_id, None)
    if name is None:
        raise ReplayError(
            f"RemoveTopicRecord for unknown topic id {to_kafka_uuid(record.topic_id)}"
        )
    for key in [k for k in state.partitions if k[0] == record.topic_id]:
        del state.partitions[key]
    state.configs.pop(name, None)


def _config(state: ReplayState, record: ApiData) -> None:
    """Topic overrides only; last write wins per key and a null value deletes the key."""
    if record.resource_type != r.RESOURCE_TOPIC:
        return
    values = state.configs.setdefault(record.resource_name, {})
    if record.value is None:
        values.pop(record.name, None)
    else:
        values[record.name] = record.value


def _register_broker(state: ReplayState, record: ApiData) -> None:
    state.brokers[record.broker_id] = BrokerImage(
        broker_id=record.broker_id,
        broker_epoch=record.broker_epoch,
        fenced=record.fenced,
        in_controlled_shutdown=record.in_controlled_shutdown,
        rack=record.rack,
    )


def _unregister_broker(state: ReplayState, record: ApiData) -> None:
    state.brokers.pop(record.broker_id, None)


def _broker_change(state: ReplayState, record: ApiData) -> None:
    """BrokerRegistrationChangeRecord: Fenced -1 unfenced, 1 fenced, 0 unchanged."""
    broker = state.brokers.get(record.broker_id)
    if broker is None:
        return
    fenced = broker.fenced if record.fenced == 0 else record.fenced == 1
    shutdown = broker.in_controlled_shutdown or record.in_controlled_shutdown == 1
    state.brokers[record.broker_id] = dataclasses.replace(
        broker, fenced=fenced, in_controlled_shutdown=shutdown
    )


def _fence(fenced: bool) -> Callable[[ReplayState, ApiData], None]:
    """The pre-3.3 Fence/UnfenceBrokerRecord pair."""

    def apply(state: ReplayState, record: ApiData) -> None:
        broker = state.brokers.get(record.id)
        if broker is not None:
            state.brokers[record.id] = dataclasses.replace(broker, fenced=fenced)

    return apply


_HANDLERS: dict[type[ApiData], Callable[[ReplayState, ApiData], None]] = {
    r.TopicRecord: _topic,
    r.PartitionRecord: _partition,
    r.PartitionChangeRecord: _partition_change,
    r.RemoveTopicRecord: _remove_topic,
    r.ConfigRecord: _config,
    r.RegisterBrokerRecord: _register_broker,
    r.UnregisterBrokerRecord: _unregister_broker,
    r.BrokerRegistrationChangeRecord: _broker_change,
    r.FenceBrokerRecord: _fence(True),
    r.UnfenceBrokerRecord: _fence(False),
}
