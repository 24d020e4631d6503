"""A cached entry's parsed indexes, with Kafka's lookups, and the cache's counters."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition
from tierflow.kafka.time_index import TimeIndex, TimestampOffset
from tierflow.kafka.txn_index import AbortedTxn
from tierflow.read.cache_stats import CacheStats


@dataclass
class IndexEntry:
    """The three indexes of one remote segment, ready for lookups."""

    segment_id: str
    start_offset: int
    offset_index: OffsetIndex
    time_index: TimeIndex
    txn_entries: list[AbortedTxn]
    size_bytes: int  # of the three files
    _offset_keys: list[int] = field(init=False, repr=False)
    _time_keys: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._offset_keys = [e.offset for e in self.offset_index.entries]
        self._time_keys = [e.timestamp for e in self.time_index.entries]

    def lookup_offset(self, offset: int) -> int:
        """lookupOffset: position of the last indexed batch at or below ``offset`` (else 0)."""
        i = bisect.bisect_right(self._offset_keys, offset)
        found = self.offset_index.entries[i - 1] if i else OffsetPosition(self.start_offset, 0)
        return found.position

    def lookup_timestamp(self, timestamp: int, starting_offset: int) -> int:
        """lookupTimestamp: the offset index at max(startingOffset, time index lookup)."""
        i = bisect.bisect_right(self._time_keys, timestamp)
        timed = self.time_index.entries[i - 1] if i else TimestampOffset(-1, self.start_offset)
        return self.lookup_offset(max(starting_offset, timed.offset))


@dataclass
class IndexCacheStats(CacheStats):
    """KIP-958's proposed cache metrics."""

    load_successes: int = 0
    load_failures: int = 0
    refetched_corrupt: int = 0
    load_time_s: float = 0.0
