"""``remoteLogSegmentMetadata`` for a manifest when the caller does not pass one.

Aiven copies Kafka's RemoteLogSegmentMetadata there; readers ignore it. Without the broker's
object at hand we rebuild it from the segment's own files: the epochs from the uploaded
leader-epoch checkpoint, cut to the segment the way Kafka's ``epochEntriesInRange`` cuts them
(the epoch in force at the start offset begins at the start offset), and the max timestamp from
the time index's last entry, which Kafka appends when it rolls a segment.
"""

from __future__ import annotations

import logging

from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.time_index import NO_TIMESTAMP, TimeIndex
from tierflow.rsm import RemoteSegment, SegmentFiles
from tierflow.transform.manifest import SegmentMetadata

log = logging.getLogger(__name__)


def segment_epochs(checkpoint: bytes, start_offset: int, end_offset: int) -> list[tuple[int, int]]:
    """(epoch, start) pairs of the segment from a leader-epoch checkpoint's text."""
    lines = checkpoint.decode("utf-8", errors="replace").splitlines()
    entries = []
    for line in lines[2:]:
        epoch, start = line.split()
        entries.append((int(epoch), int(start)))
    inside = [(e, s) for e, s in entries if start_offset < s <= end_offset]
    before = [(e, s) for e, s in entries if s <= start_offset]
    head = [(before[-1][0], start_offset)] if before else []
    return head + inside


def derive_segment_metadata(
    segment: RemoteSegment, files: SegmentFiles, *, broker_id: int, now_ms: int
) -> SegmentMetadata:
    try:
        epochs = segment_epochs(files.leader_epoch_index, segment.start_offset, segment.end_offset)
    except ValueError as exc:
        log.warning("%s: unreadable leader-epoch checkpoint (%s)", segment.describe(), exc)
        epochs = []
    try:
        index = TimeIndex.from_bytes(
            files.time_index, segment.start_offset, source=f"{segment.describe()} time index"
        )
        max_timestamp = max((e.timestamp for e in index.entries), default=NO_TIMESTAMP)
    except KafkaFormatError as exc:
        log.warning("%s: unreadable time index (%s)", segment.describe(), exc)
        max_timestamp = NO_TIMESTAMP
    return SegmentMetadata(
        **segment.identity(),
        max_timestamp_ms=max_timestamp,
        broker_id=broker_id,
        event_timestamp_ms=now_ms,
        segment_leader_epochs=tuple(epochs),
    )
