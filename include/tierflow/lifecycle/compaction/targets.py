"""The partitions a compaction run takes: an indexed query each, nothing read from the bucket.

A partition is taken when its cleanable range is due by Kafka's rules (``rules``), or, for a
run asked for by hand, whenever it has a cleanable range; and always when an interrupted swap
left segments to delete (two FINISHED segments overlap), so a rerun finishes it whatever the
clean section says.
"""

from __future__ import annotations

from tierflow.lifecycle.compaction.rules import CompactionRules, cleanable_range, needs_compaction
from tierflow.lifecycle.compaction.supersede import covered_pairs
from tierflow.lifecycle.compaction.swap import compactable
from tierflow.metadata.models import Partition, Topic
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore


def compaction_targets(
    store: MetadataStore, *, now_ms: int, topic: str | None = None, force: bool = False
) -> list[tuple[Topic, int]]:
    """(topic, partition) of every partition with compaction work, in topic order. A named
    ``topic`` that is not compacted is a NotCompactedError: the run was asked for in vain."""
    topics = [_named(store, topic)] if topic else store.topics()
    targets = []
    for each in topics:
        if compactable(each) is not None:
            continue
        for state in store.partitions(each.topic_id):
            if _has_work(store, each, state, now_ms=now_ms, force=force):
                targets.append((each, state.partition))
    return targets


class NotCompactedError(ValueError):
    """The topic named for compaction has no compacted remote tier (``compactable``)."""


def _named(store: MetadataStore, name: str) -> Topic:
    topic = store.topic(name)
    reason = compactable(topic)
    if reason is not None:
        raise NotCompactedError(f"topic {name}: {reason}; there is nothing to compact")
    return topic


def _has_work(
    store: MetadataStore, topic: Topic, state: Partition, *, now_ms: int, force: bool
) -> bool:
    if store.partition_delete(topic.topic_id, state.partition) is not None:
        return False  # remote partition removal owns it
    rules = CompactionRules.of(topic)
    finished = store.segment_summaries(
        topic.topic_id, state.partition, states=[S.COPY_SEGMENT_FINISHED]
    )
    if covered_pairs(finished):
        return True
    segments = cleanable_range(finished, state, rules, now_ms)
    if force:
        return bool(segments)
    return needs_compaction(segments, state, rules, now_ms) is not None
