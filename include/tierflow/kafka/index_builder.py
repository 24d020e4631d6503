"""A segment's ``.index`` and ``.timeindex`` built as its batches are appended, the way Kafka's
``LogSegment.append`` and ``UnifiedLog.roll`` write them:

- ``.index``: an entry (the batch's last offset, the position of its start) once more than
  ``index.interval.bytes`` were appended since the previous entry;
- ``.timeindex``: at the same moments, the largest timestamp so far and the last offset of
  its batch, if that timestamp is larger than the last entry's; and once more at the roll.

Offsets may leave gaps (a compacted segment's do): only their order matters.
"""

from __future__ import annotations

from tierflow.kafka.offset_index import OffsetPosition, offset_index_bytes
from tierflow.kafka.time_index import TimeIndexBuilder, time_index_bytes

INDEX_INTERVAL_BYTES = 4096  # Kafka's index.interval.bytes default


class SegmentIndexBuilder:
    """The indexes of the segment starting at ``base_offset``, one appended batch at a time."""

    def __init__(self, base_offset: int, index_interval_bytes: int = INDEX_INTERVAL_BYTES) -> None:
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.size_in_bytes = 0
        self._since_index_entry = 0
        self._offsets: list[OffsetPosition] = []
        self._times = TimeIndexBuilder()

    @property
    def max_timestamp(self) -> int:
        return self._times.max_timestamp

    def append(self, last_offset: int, max_timestamp: int, size: int) -> None:
        """One batch appended at the current end: its last offset, max timestamp and size."""
        self._times.observe(max_timestamp, last_offset)
        if self._since_index_entry > self.index_interval_bytes:
            self._offsets.append(OffsetPosition(last_offset, self.size_in_bytes))
            self._times.maybe_append()
            self._since_index_entry = 0
        self._since_index_entry += size
        self.size_in_bytes += size

    def roll(self) -> tuple[bytes, bytes]:
        """The ``.index`` and ``.timeindex`` bytes, with the time index's entry at the roll."""
        self._times.maybe_append()
        return (
            offset_index_bytes(self.base_offset, self._offsets),
            time_index_bytes(self.base_offset, self._times.entries),
        )
