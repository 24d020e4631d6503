"""Recording that Kafka deleted a topic, so its remote data is removed (D5, D6).

``delete_topic`` marks every partition of the topic's id DELETE_PARTITION_MARKED and then
retires the name, so Kafka may recreate a topic with that name (a new id) while the remover
still works on the old one; the two never mix because every row and key carries the id.
Marking a topic that is already marked (by the CLI and detection, or twice) counts as one.

Codes like D5 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from tierflow.lifecycle.removal.remove import mark_topic_deleted
from tierflow.metadata.errors import UnknownTopicError
from tierflow.metadata.models import Topic
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import RETIRED_MARK, kafka_topic_name

LIVE = (
    RemoteLogSegmentState.COPY_SEGMENT_STARTED,
    RemoteLogSegmentState.COPY_SEGMENT_FINISHED,
    RemoteLogSegmentState.DELETE_SEGMENT_STARTED,
)


@dataclass
class TopicDeletion:
    """What deleting one topic id means for its remote data, and what was recorded."""

    topic: str
    topic_id: str
    partitions: list[int] = field(default_factory=list)
    remote_segments: int = 0
    remote_bytes: int = 0
    newly_marked: list[int] = field(default_factory=list)
    already_marked: bool = False  # nothing new was recorded: a repeated mark
    name_retired: bool = False

    def as_dict(self) -> dict:
        return asdict(self)


def plan_topic_deletion(
    store: MetadataStore, topic_name: str, *, topic_id: str | None = None
) -> TopicDeletion:
    """The topic's partitions and the remote segments and bytes removal will delete."""
    topic = resolve_topic(store, topic_name, topic_id=topic_id)
    plan = TopicDeletion(kafka_topic_name(topic.name), topic.topic_id)
    for partition in store.partitions(topic.topic_id):
        plan.partitions.append(partition.partition)
        for row in store.segments(topic.topic_id, partition.partition, states=LIVE):
            plan.remote_segments += 1
            plan.remote_bytes += row.segment_size_bytes
    plan.already_marked = RETIRED_MARK in topic.name
    return plan


def delete_topic(
    store: MetadataStore,
    topic_name: str,
    *,
    actor: str,
    now_ms: int,
    topic_id: str | None = None,
) -> TopicDeletion:
    """Mark every partition for remote removal, then free the name. Safe to repeat."""
    result = plan_topic_deletion(store, topic_name, topic_id=topic_id)
    if not result.already_marked:
        result.newly_marked = mark_topic_deleted(
            store, result.topic, actor=actor, now_ms=now_ms, topic_id=result.topic_id
        )
        result.name_retired = store.retire_topic_name(result.topic_id, actor=actor, now_ms=now_ms)
        result.already_marked = not result.newly_marked and not result.name_retired
    return result


def resolve_topic(store: MetadataStore, name: str, *, topic_id: str | None = None) -> Topic:
    """The live topic of that name, or (with an id, or once retired) the row of that id.

    A second ``delete-topic T`` after the first retired the name finds the retired row, so
    repeating the command reports "already marked" instead of "unknown topic".
    """
    if topic_id is not None:
        topic = store.topic_by_id(topic_id)
        if kafka_topic_name(topic.name) != name:
            raise UnknownTopicError(f"topic id {topic_id} belongs to {topic.name}, not {name}")
        return topic
    live = [t for t in store.topics() if t.name == name]
    if live:
        return live[0]
    retired = [t for t in store.topics() if kafka_topic_name(t.name) == name]
    if len(retired) == 1:
        return retired[0]
    if retired:
        ids = ", ".join(t.topic_id for t in retired)
        raise UnknownTopicError(
            f"topic {name} is not registered; deleted incarnations {ids}: pass --topic-id"
        )
    raise UnknownTopicError(f"topic {name} is not registered with tierflow")
