"""Following the brokers' ``__remote_log_metadata``: their segments mirrored into the store.

For topics the brokers copy (``copier=broker``), every record becomes the same transition in
tierflow's store, marked as a broker's (``writer=broker``, actor ``broker:<id>``, Kafka's event
time), so that everything of tierflow's that only reads (restore, the Iceberg export, verify,
reconcile, status, the page, the metrics) works on them. tierflow never copies, expires or
removes them.

Reading the topic from the start again changes nothing: a segment already known is not added
again, and a state already reached (or passed) is not applied twice. Records of topics tierflow
does not follow, and of segments tierflow wrote itself, are counted and left alone. How far
each metadata partition was read is kept in the store, as a run that stops resumes there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tierflow.faults import crash_point
from tierflow.kafka.remote_log_metadata.records import (
    PartitionDelete,
    RemoteLogMetadata,
    SegmentMetadata,
    SegmentUpdate,
)
from tierflow.kafka.remote_log_metadata.serde import deserialize
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic
from tierflow.lifecycle.started import started_segment
from tierflow.metadata.errors import InvalidStateTransition
from tierflow.metadata.models import BROKER_COPIER, Topic
from tierflow.metadata.states import RemoteLogSegmentState, RemotePartitionDeleteState
from tierflow.metadata.store import MetadataStore, SegmentTransition
from tierflow.rsm import RemoteSegment

SAVE_EVERY = 500  # records between two saves of a partition's position


POSITION_PREFIX = "follow-"


def position_name(metadata_partition: int) -> str:
    return f"{POSITION_PREFIX}{metadata_partition}"


@dataclass
class FollowReport:
    read: int = 0  # records read
    mirrored: int = 0  # transitions applied to the store
    known: int = 0  # already mirrored (a re-read), or tierflow's own segments
    not_followed: int = 0  # records of topics tierflow does not follow
    positions: dict[int, int] = field(default_factory=dict)  # next offset per partition


def follow(store: MetadataStore, topic: MetadataTopic, *, from_start: bool = False) -> FollowReport:
    report = FollowReport()
    followed = {t.topic_id: t for t in store.topics() if t.copier == BROKER_COPIER}
    for partition in range(topic.partitions()):
        name = position_name(partition)
        start = 0 if from_start else store.position(name) or 0
        for n, record in enumerate(topic.read(partition, start), 1):
            report.read += 1
            _count(report, mirror(store, followed, deserialize(record.value)))
            crash_point("rlmm.after_mirror")
            start = record.offset + 1
            if n % SAVE_EVERY == 0:
                store.set_positions({name: start})
                crash_point("rlmm.follow_saved")
        store.set_positions({name: start})
        report.positions[partition] = start
    return report


def follow_topic(store: MetadataStore, name: str, *, actor: str, now_ms: int) -> bool:
    """Mark ``name`` as the brokers' and have the next run read every partition from the
    start, so their records of it from before are mirrored too. ValueError if tierflow holds
    copies of it: that is a hand-over."""
    topic = store.topic(name)
    if store.partitions_with_segments(list(RemoteLogSegmentState), topic.topic_id):
        raise ValueError(
            f"topic {name}: tierflow has copied segments of it; hand it over instead "
            f"(tierflow topics handover {name})"
        )
    changed = store.set_copier(topic.topic_id, BROKER_COPIER, actor=actor, now_ms=now_ms)
    store.set_positions({name_: 0 for name_ in store.positions_named(POSITION_PREFIX)})
    return changed


def _count(report: FollowReport, outcome: str) -> None:
    if outcome == "mirrored":
        report.mirrored += 1
    elif outcome == "known":
        report.known += 1
    else:
        report.not_followed += 1


def mirror(store: MetadataStore, followed: dict[str, Topic], record: RemoteLogMetadata) -> str:
    """Apply one record: "mirrored", "known" (nothing to do), or "not followed"."""
    where = record.partition
    if where.topic_id not in followed:
        return "not followed"
    actor, when = f"broker:{record.broker_id}", record.event_timestamp_ms
    try:
        if isinstance(record, PartitionDelete):
            state = RemotePartitionDeleteState.for_id(record.state)
            changed = store.transition_partition_delete(
                where.topic_id, where.partition, state, actor=actor, now_ms=when
            )
        elif isinstance(record, SegmentMetadata):
            changed = _add(store, record, actor)
        else:
            changed = _update(store, record, actor)
    except InvalidStateTransition:
        changed = False  # passed already: a re-read of an older record
    return "mirrored" if changed else "known"


def _add(store: MetadataStore, record: SegmentMetadata, actor: str) -> bool:
    if store.find_segment(record.segment_id) is not None:
        return False
    where = record.partition
    if store.partition(where.topic_id, where.partition) is None:
        store.ensure_partition(
            where.topic_id, where.partition, log_start_offset=0, local_log_start_offset=0
        )
    segment = RemoteSegment(
        where.topic,
        where.topic_id,
        where.partition,
        record.segment_id,
        record.start_offset,
        record.end_offset,
    )
    started = started_segment(
        segment,
        record,
        txn_index_empty=record.txn_index_empty,
        custom_metadata=record.custom_metadata,
        writer=BROKER_COPIER,
    )
    store.add_segment(started, actor=actor, now_ms=record.event_timestamp_ms)
    return True


def _update(store: MetadataStore, record: SegmentUpdate, actor: str) -> bool:
    segment = store.find_segment(record.segment_id)
    if segment is None or segment.writer != BROKER_COPIER:
        return False  # its STARTED record was not followed, or tierflow wrote it
    state = RemoteLogSegmentState.for_id(record.state)
    transition = SegmentTransition(record.segment_id, state, custom_metadata=record.custom_metadata)
    return store.transition_segment(transition, actor=actor, now_ms=record.event_timestamp_ms)
