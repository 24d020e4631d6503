"""Kafka's RemoteIndexCache, in memory: offset and time indexes of remote segments by id.

The read path's default when no on-disk cache (``tierflow.read.index_cache``) is configured: it
needs no directory and loads only the index type a lookup needs.

A fetch needs the segment's offset index to find where to start reading; downloading it for
every fetch would cost a remote round trip each time. Entries are keyed by segment id (I1),
weighted by their index bytes and bounded in total (I2, least recently used first out).
Each index type is loaded on first use, so offset fetches never download time indexes.

Codes like I1 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Protocol

from tierflow.kafka.offset_index import OffsetIndex, OffsetPosition
from tierflow.kafka.time_index import TimeIndex, TimestampOffset
from tierflow.read.cache_stats import CacheStats
from tierflow.read.remote_reads import RemoteReads
from tierflow.rsm import IndexType, RemoteSegment

DEFAULT_MAX_BYTES = 64 * 1024 * 1024


@dataclass
class _Entry:
    offsets: OffsetIndex | None = None
    offset_keys: list[int] = field(default_factory=list)
    times: TimeIndex | None = None
    time_keys: list[int] = field(default_factory=list)
    weight: int = 0

    def lookup_offset(self, target: int) -> OffsetPosition:
        """OffsetIndex.lookup, on keys computed once instead of on every call."""
        assert self.offsets is not None
        i = bisect.bisect_right(self.offset_keys, target)
        return self.offsets.entries[i - 1] if i else OffsetPosition(self.offsets.base_offset, 0)

    def lookup_time(self, timestamp: int) -> TimestampOffset:
        assert self.times is not None
        i = bisect.bisect_right(self.time_keys, timestamp)
        return self.times.entries[i - 1] if i else TimestampOffset(-1, self.times.base_offset)


class IndexLookups(Protocol):
    """What the read path asks of an index cache: this one, or the on-disk
    ``tierflow.read.index_cache.RemoteIndexCache``."""

    def lookup_offset(self, reads: RemoteReads, segment: RemoteSegment, offset: int) -> int: ...

    def lookup_timestamp(
        self, reads: RemoteReads, segment: RemoteSegment, timestamp: int, starting_offset: int
    ) -> int: ...


class RemoteIndexCache:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes <= 0:
            raise ValueError(f"index cache size must be positive, got {max_bytes}")
        self.max_bytes = max_bytes
        self.stats = CacheStats()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def lookup_offset(self, reads: RemoteReads, segment: RemoteSegment, offset: int) -> int:
        """lookupOffset (I7): byte position of the last indexed batch at or below ``offset``."""
        entry = self._entry(reads, segment, IndexType.OFFSET)
        return entry.lookup_offset(offset).position

    def lookup_timestamp(
        self, reads: RemoteReads, segment: RemoteSegment, timestamp: int, starting_offset: int
    ) -> int:
        """lookupTimestamp (I7): offset index at max(startingOffset, time index lookup)."""
        timed = self._entry(reads, segment, IndexType.TIMESTAMP).lookup_time(timestamp)
        entry = self._entry(reads, segment, IndexType.OFFSET)
        return entry.lookup_offset(max(starting_offset, timed.offset)).position

    def remove(self, segment_id: str) -> None:
        with self._lock:
            entry = self._entries.pop(segment_id, None)
            if entry is not None:
                self._weight -= entry.weight

    def remove_all(self, segment_ids: list[str]) -> None:
        """Kafka's removeAll: drop the entries of these segments."""
        for segment_id in segment_ids:
            self.remove(segment_id)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weight = 0

    def __contains__(self, segment_id: object) -> bool:
        return segment_id in self._entries

    @property
    def size_bytes(self) -> int:
        return self._weight

    def _entry(self, reads: RemoteReads, segment: RemoteSegment, index_type: IndexType) -> _Entry:
        with self._lock:
            entry = self._entries.get(segment.segment_id)
            if entry is not None and _has(entry, index_type):
                self._entries.move_to_end(segment.segment_id)
                self.stats.hits += 1
                return entry
            self.stats.misses += 1
        # Download outside the lock: a slow GET must not block lookups of other segments.
        data = reads.fetch_index(segment, index_type)
        source = f"{segment.describe()} {index_type.value} index"
        with self._lock:
            entry = self._entries.setdefault(segment.segment_id, _Entry())
            if not _has(entry, index_type):
                if index_type is IndexType.OFFSET:
                    entry.offsets = OffsetIndex.from_bytes(
                        data, segment.start_offset, source=source
                    )
                    entry.offset_keys = [e.offset for e in entry.offsets.entries]
                else:
                    entry.times = TimeIndex.from_bytes(data, segment.start_offset, source=source)
                    entry.time_keys = [e.timestamp for e in entry.times.entries]
                entry.weight += len(data)
                self._weight += len(data)
            self._entries.move_to_end(segment.segment_id)
            self._evict(keep=segment.segment_id)
            return entry

    def _evict(self, keep: str) -> None:
        while self._weight > self.max_bytes and len(self._entries) > 1:
            segment_id, entry = next(iter(self._entries.items()))
            if segment_id == keep:
                self._entries.move_to_end(segment_id)
                continue
            del self._entries[segment_id]
            self._weight -= entry.weight
            self.stats.evictions += 1


def _has(entry: _Entry, index_type: IndexType) -> bool:
    return (entry.offsets if index_type is IndexType.OFFSET else entry.times) is not None


DEFAULT_INDEX_CACHE = RemoteIndexCache()
