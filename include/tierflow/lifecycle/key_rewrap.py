"""Key rotation for stored segments: move every data key under the active key id.

Only manifests change (the data key stays, its wrapping changes), and the store's row for the
manifest is updated with the new size and checksum. A run killed between the two steps is
repaired by the next run: a manifest already under the active key whose row does not match
gets its row fixed.

Progress is counted in segments and in their manifests' bytes: the manifest is all a re-wrap
reads and writes, whatever the size of the segment's data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from tierflow.lifecycle.progress import NO_PROGRESS, Progress
from tierflow.metadata.models import SegmentObjectKind
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.metadata.store import MetadataStore
from tierflow.rsm import ObjectInfo, RemoteSegment, RemoteStorageError
from tierflow.storage.chunked import MANIFEST, ChunkedRemoteStorageManager


@dataclass
class RewrapSummary:
    rewrapped: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # unencrypted or already active
    repaired_rows: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (segment id, error)


class FinishedSegment(NamedTuple):
    segment: RemoteSegment
    manifest_size: int  # its rsm-manifest object's recorded size; 0 when it has none


def finished_segments(store: MetadataStore, topic: str | None = None) -> list[FinishedSegment]:
    """Every COPY_SEGMENT_FINISHED segment with its manifest's size, by partition; an unknown
    ``topic`` is an UnknownTopicError, not an empty list."""
    found = []
    for row_topic in store.topics() if topic is None else [store.topic(topic)]:
        for partition in store.partitions(row_topic.topic_id):
            rows = store.segments(
                row_topic.topic_id,
                partition.partition,
                states=[RemoteLogSegmentState.COPY_SEGMENT_FINISHED],
            )
            manifests = _manifest_sizes(store, row_topic.topic_id, partition.partition)
            for row in rows:
                segment = RemoteSegment(
                    row_topic.name,
                    row.topic_id,
                    row.partition,
                    row.segment_id,
                    row.start_offset,
                    row.end_offset,
                )
                found.append(FinishedSegment(segment, manifests.get(row.segment_id, 0)))
    return found


def _manifest_sizes(store: MetadataStore, topic_id: str, partition: int) -> dict[str, int]:
    """Segment id to its manifest's size, in one query for the partition."""
    return {
        found.segment_id: found.size
        for found in store.finished_objects(topic_id, partition).values()
        if found.kind == SegmentObjectKind.RSM_MANIFEST.value
    }


def rewrap_segments(
    store: MetadataStore,
    rsm: ChunkedRemoteStorageManager,
    *,
    actor: str,
    now_ms: Callable[[], int],
    topic: str | None = None,
    progress: Progress = NO_PROGRESS,
) -> RewrapSummary:
    """Re-wrap every finished segment's data key under the active key; ``progress`` hears of
    the segments and manifest bytes to do, then of each one done."""
    summary = RewrapSummary()
    found = finished_segments(store, topic)
    progress.add_total(len(found), sum(item.manifest_size for item in found))
    for segment, manifest_size in found:
        progress.note(segment.describe())
        segment_id = segment.segment_id
        try:
            info = rsm.rewrap(segment)
            if info is not None:
                _record(store, segment_id, info, actor=actor, now_ms=now_ms())
                summary.rewrapped.append(segment_id)
            elif _repair_row(store, rsm, segment, actor=actor, now_ms=now_ms()):
                summary.repaired_rows.append(segment_id)
            else:
                summary.unchanged.append(segment_id)
        except RemoteStorageError as exc:
            summary.failed.append((segment_id, str(exc)))
        progress.advance(1, manifest_size)
    return summary


def _record(
    store: MetadataStore, segment_id: str, info: ObjectInfo, *, actor: str, now_ms: int
) -> None:
    store.update_segment_object(
        segment_id,
        SegmentObjectKind.RSM_MANIFEST,
        info.key,
        info.size,
        info.sha256 or "",
        actor=actor,
        now_ms=now_ms,
    )


def _repair_row(
    store: MetadataStore,
    rsm: ChunkedRemoteStorageManager,
    segment: RemoteSegment,
    *,
    actor: str,
    now_ms: int,
) -> bool:
    """Fix the manifest's row if a previous run rewrote the manifest and died before it."""
    rows = {row.kind: row for row in store.segment_objects(segment.segment_id)}
    row = rows.get(SegmentObjectKind.RSM_MANIFEST.value)
    if row is None:
        return False
    key = rsm.key(segment, MANIFEST)
    data = rsm.objects.read_range(key)
    digest = hashlib.sha256(data).hexdigest()
    if (row.size, row.sha256) == (len(data), digest):
        return False
    _record(
        store,
        segment.segment_id,
        ObjectInfo(key, len(data), digest),
        actor=actor,
        now_ms=now_ms,
    )
    return True
