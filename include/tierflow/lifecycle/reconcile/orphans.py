"""Orphan-object findings: keys that no live segment row names.

Objects named only by a DELETE_SEGMENT_FINISHED tombstone, or lying outside every registered
partition, are orphans too. Only those older than the object grace period are deleted: a copy
in flight names its objects before it uploads them, but listings and clocks lag.
"""

from __future__ import annotations

from typing import NamedTuple

from tierflow.lifecycle.reconcile.findings import Action, Finding, FindingKind, ReconcilePlan
from tierflow.lifecycle.reconcile.layout import (
    PartitionScan,
    TopicKey,
    named_topic,
    segment_id_of,
)
from tierflow.lifecycle.reconcile.segments import LIVE_NAMES, segment_row
from tierflow.metadata.models import Topic
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import kafka_topic_name
from tierflow.storage.keys import KeyPlace
from tierflow.storage.object_store import ObjectStore


class Place(NamedTuple):
    """Where an orphan key lies, for its finding and message."""

    topic: str | None
    topic_id: str | None
    partition: int | None
    why: str


def unregistered_place(place: KeyPlace, topics: dict[TopicKey, Topic]) -> Place:
    """Describe a key outside every registered partition prefix, from what its directories
    name (layout.key_place)."""
    named = named_topic(place)
    topic = None if named is None else topics.get(named)
    if topic is None:
        return Place(None, None, None, "outside every registered topic")
    name = kafka_topic_name(topic.name)
    number = place.partition
    if number is None:
        return Place(name, topic.topic_id, None, f"under topic {name} but in no partition")
    return Place(name, topic.topic_id, number, f"partition {number} of {name} is not registered")


def leftover_place(place: KeyPlace, topics: dict[TopicKey, Topic]) -> Place:
    """Where a killed upload's temporary file lies: never an object, whatever names its key."""
    found = unregistered_place(place, topics)
    return found._replace(why="temporary file of an upload that was killed")


def orphan_place(store: MetadataStore, scan: PartitionScan, key: str) -> Place | None:
    """Where an unnamed key in a registered partition lies, and whose tombstone it is; None
    when a live segment names it after all (a copy that started after the partition was read).
    """
    row = segment_row(store, segment_id_of(key))
    if row is None:
        why = "no segment names it"
    elif row.state in LIVE_NAMES:
        return None
    else:
        why = f"its segment {row.segment_id} is {row.state}"
    return Place(**scan.finding_names, why=why)


def add_orphan(
    plan: ReconcilePlan, objects: ObjectStore, key: str, place: Place, *, deletable: bool = True
) -> None:
    """``deletable=False``: reported, never deleted, whatever its age (``place.why`` says why)."""
    found = objects.stat(key)
    if found is None:
        return  # deleted between the listing and now: nothing to report
    age = plan.age_of(found.last_modified_ms)
    note = plan.object_grace_note(age) if deletable else "reported only, never deleted"
    plan.findings.append(
        Finding(
            kind=FindingKind.ORPHAN_OBJECT,
            action=Action.DELETE_OBJECT if deletable else Action.REPORT_ONLY,
            actionable=deletable and plan.past_object_grace(age),
            message=f"{key}: {place.why}; {note}",
            topic=place.topic,
            topic_id=place.topic_id,
            partition=place.partition,
            key=key,
            segment_id=segment_id_of(key),
            size=found.size,
            age_ms=age,
        )
    )
