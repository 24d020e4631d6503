"""A bounded cache of decoded (plaintext) chunks: memory first, then an optional disk tier.

Consumers read a segment forward, a window at a time, so the next window usually starts in the
chunk the last one ended in; caching it saves a ranged GET and a decrypt. With
``prefetch_chunks`` a miss also loads the following chunks in the SAME ranged read, stopping at
the segment's last chunk (never crossing into the next segment) and at the first chunk already
cached. Both tiers evict least-recently-used first and never exceed their byte budgets; a chunk
evicted from memory moves to disk when there is a disk tier.

Like Aiven's disk cache, the disk tier holds plaintext, so it belongs on a private directory;
it is wiped of our files when the cache starts, because nothing on it outlives the process.
"""

from __future__ import annotations

import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tierflow.config import Settings
from tierflow.read.cache_stats import CacheStats

# load(first_chunk_id, last_chunk_id) -> the plaintext of those chunks, in order.
ChunkLoader = Callable[[int, int], list[bytes]]

_SUFFIX = ".chunk"


@dataclass
class ChunkCacheStats(CacheStats):
    prefetched: int = 0  # chunks loaded ahead in the ranged read of a miss


class ChunkCache:
    def __init__(
        self,
        memory_bytes: int,
        disk_dir: Path | None = None,
        disk_bytes: int = 0,
        prefetch_chunks: int = 0,
    ) -> None:
        if memory_bytes < 0 or disk_bytes < 0 or prefetch_chunks < 0:
            raise ValueError("cache budgets and prefetch_chunks must not be negative")
        self.memory_bytes = memory_bytes
        self.disk_dir = None if disk_dir is None else Path(disk_dir)
        self.disk_bytes = disk_bytes if disk_dir is not None else 0
        self.prefetch_chunks = prefetch_chunks
        self.stats = ChunkCacheStats()
        self._memory: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._disk: OrderedDict[tuple[str, int], int] = OrderedDict()  # key -> size
        self._memory_used = 0
        self._disk_used = 0
        self._lock = threading.Lock()
        if self.disk_dir is not None:
            self.disk_dir.mkdir(parents=True, exist_ok=True)
            self._wipe_disk()

    @property
    def memory_used(self) -> int:
        return self._memory_used

    @property
    def disk_used(self) -> int:
        return self._disk_used

    def get(self, segment: str, chunk_id: int, chunk_count: int, load: ChunkLoader) -> bytes:
        """Chunk ``chunk_id`` of ``segment`` (of ``chunk_count`` chunks), loading on a miss."""
        key = (segment, chunk_id)
        found = self._lookup(key)
        if found is not None:
            return found
        last = chunk_id
        while (
            last + 1 < chunk_count
            and last - chunk_id < self.prefetch_chunks
            and not self.contains(segment, last + 1)
        ):
            last += 1
        loaded = load(chunk_id, last)
        if len(loaded) != last - chunk_id + 1:
            raise ValueError(
                f"{segment}: loader returned {len(loaded)} chunks for {chunk_id}-{last}"
            )
        with self._lock:
            self.stats.misses += 1
            self.stats.prefetched += last - chunk_id
            for offset, data in enumerate(loaded):
                self._put_memory((segment, chunk_id + offset), data)
        return loaded[0]

    def contains(self, segment: str, chunk_id: int) -> bool:
        with self._lock:
            return (segment, chunk_id) in self._memory or (segment, chunk_id) in self._disk

    def discard(self, segment: str) -> None:
        """Forget every chunk of a segment (it was deleted or rewritten)."""
        with self._lock:
            for key in [k for k in self._memory if k[0] == segment]:
                self._memory_used -= len(self._memory.pop(key))
            for key in [k for k in self._disk if k[0] == segment]:
                self._drop_disk(key)

    def clear(self) -> None:
        with self._lock:
            self._memory.clear()
            self._memory_used = 0
            for key in list(self._disk):
                self._drop_disk(key)

    # -- internals (called with the lock held, except _lookup) --------------------------------

    def _lookup(self, key: tuple[str, int]) -> bytes | None:
        with self._lock:
            data = self._memory.get(key)
            if data is not None:
                self._memory.move_to_end(key)
                self.stats.hits += 1
                return data
            if key not in self._disk:
                return None
            path = self._disk_path(key)
            try:
                data = path.read_bytes()
            except OSError:
                self._drop_disk(key)
                return None
            self._drop_disk(key)
            self.stats.hits += 1
            self._put_memory(key, data)  # promote: it is being read again
            return data

    def _put_memory(self, key: tuple[str, int], data: bytes) -> None:
        if key in self._memory:
            self._memory_used -= len(self._memory.pop(key))
        if len(data) > self.memory_bytes:
            self._put_disk(key, data)
            return
        self._memory[key] = data
        self._memory_used += len(data)
        while self._memory_used > self.memory_bytes:
            old_key, old = self._memory.popitem(last=False)
            self._memory_used -= len(old)
            self._put_disk(old_key, old)

    def _put_disk(self, key: tuple[str, int], data: bytes) -> None:
        if self.disk_dir is None or len(data) > self.disk_bytes:
            self.stats.evictions += 1
            return
        if key in self._disk:
            self._drop_disk(key)
        while self._disk_used + len(data) > self.disk_bytes:
            self._drop_disk(next(iter(self._disk)))
            self.stats.evictions += 1
        path = self._disk_path(key)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        self._disk[key] = len(data)
        self._disk_used += len(data)

    def _drop_disk(self, key: tuple[str, int]) -> None:
        self._disk_used -= self._disk.pop(key)
        self._disk_path(key).unlink(missing_ok=True)

    def _disk_path(self, key: tuple[str, int]) -> Path:
        assert self.disk_dir is not None
        segment, chunk_id = key
        return self.disk_dir / f"{segment.replace('/', '_')}-{chunk_id}{_SUFFIX}"

    def _wipe_disk(self) -> None:
        assert self.disk_dir is not None
        for path in self.disk_dir.iterdir():
            ours = path.name.endswith(_SUFFIX) or (
                path.name.endswith(".tmp") and f"{_SUFFIX}." in path.name
            )
            if path.is_file() and ours:
                path.unlink(missing_ok=True)


def chunk_cache_for(settings: Settings) -> ChunkCache | None:
    """The chunk cache the settings ask for (``chunk.cache.*``), or None when both sizes are 0."""
    if not (settings.chunk_cache_bytes or settings.chunk_cache_disk_bytes):
        return None
    return ChunkCache(
        settings.chunk_cache_bytes,
        disk_dir=settings.chunk_cache_dir,
        disk_bytes=settings.chunk_cache_disk_bytes,
        prefetch_chunks=settings.chunk_prefetch,
    )
