"""Everything a failed operation could have left behind, captured so a case can compare it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from string import Template

from tests.corpus.damage import digest_tree
from tests.support.tiered import Tiered
from tierflow.metadata.states import RemoteLogSegmentState


@dataclass(frozen=True)
class Snapshot:
    """Store rows and history, bucket objects and local files, by content."""

    topics: list[tuple]
    segments: list[tuple]
    events: list[tuple]
    bucket: dict[str, str]
    local: dict[str, str]


def snapshot(t: Tiered) -> Snapshot:
    topics = t.store.topics()
    segments = [
        (row.segment_id, row.state, row.start_offset)
        for topic in topics
        for part in t.store.partitions(topic.topic_id)
        for row in t.store.segments(topic.topic_id, part.partition)
    ]
    events = [
        (e.id, e.entity, e.topic_id, e.partition, e.segment_id, e.from_state, e.to_state)
        for e in t.store.events()
    ]
    return Snapshot(
        topics=[
            (tp.topic_id, tp.name, tuple(sorted(tp.config.as_fields().items()))) for tp in topics
        ],
        segments=segments,
        events=events,
        bucket=digest_tree(t.bucket()) if t.bucket().exists() else {},
        local=digest_tree(t.settings.log_dirs[0]),
    )


def finished_ranges(t: Tiered, topic: str, partition: int) -> list[tuple[int, int]]:
    rows = t.store.segments(
        t.store.topic(topic).topic_id,
        partition,
        states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED],
    )
    return [(r.start_offset, r.end_offset) for r in rows]


def recorded_keys(t: Tiered) -> set[str]:
    """Object keys of every FINISHED segment: the only objects a bucket may hold after a run."""
    keys = set()
    for topic in t.store.topics():
        for part in t.store.partitions(topic.topic_id):
            for row in t.store.segments(
                topic.topic_id, part.partition, states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED]
            ):
                keys.update(o.key for o in t.store.segment_objects(row.segment_id))
    return keys


def pattern(template: str, names: dict[str, object]) -> str:
    """``template`` with each $name replaced by the escaped text of ``names[name]``."""
    return Template(template).substitute({k: re.escape(str(v)) for k, v in names.items()})
