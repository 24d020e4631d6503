"""RemoteIndexCache: the bookkeeping, loading, eviction and cleanup (see the package docs).

Codes like I4 refer to docs/kafka-behaviours.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from tierflow.config import Settings
from tierflow.kafka import txn_index
from tierflow.kafka.errors import KafkaFormatError
from tierflow.read.index_cache.disk_entry import IndexCacheStats, IndexEntry
from tierflow.read.index_cache.disk_files import (
    DELETED_SUFFIX,
    DIR_NAME,
    SUFFIXES,
    TMP_SUFFIX,
    OnDisk,
    file_mtime,
    file_prefix,
    file_size,
    fsync_directory,
    is_complete,
    parse_file_name,
    read_cache_file,
    unlink_quietly,
)
from tierflow.read.remote_reads import RemoteReads
from tierflow.rsm import (
    IndexType,
    RemoteResourceNotFoundError,
    RemoteSegment,
    RemoteStorageManager,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 1024 * 1024 * 1024  # remote.log.index.file.cache.total.size.bytes
# Parsed indexes kept in memory, counted in index file bytes (the objects take more).
DEFAULT_MEMORY_BYTES = 64 * 1024 * 1024
DEFAULT_STALE_AFTER_S = 300.0
TOUCH_INTERVAL_S = 60.0
_STRIPES = 64


@dataclass
class _Slot:
    """An entry whose three files are on disk."""

    segment_id: str
    prefix: str
    size_bytes: int
    accessed: float  # wall clock seconds
    touched: float  # when the .index mtime was last set to ``accessed``
    stamp: tuple[tuple[int, int], ...] = ()  # (size, inode) per file when loaded
    entry: IndexEntry | None = None  # parsed, while in the in-memory working set


class RemoteIndexCache:
    """The on-disk index cache; ``cache_dir`` is the parent (Kafka: the first log dir)."""

    def __init__(
        self,
        cache_dir: Path,
        max_bytes: int = DEFAULT_MAX_BYTES,
        *,
        memory_bytes: int = DEFAULT_MEMORY_BYTES,
        stale_after_s: float = DEFAULT_STALE_AFTER_S,
    ) -> None:
        if max_bytes <= 0:
            raise ValueError(f"index cache size must be positive, got {max_bytes}")
        self.directory = Path(cache_dir) / DIR_NAME
        self.max_bytes = max_bytes
        self.memory_bytes = memory_bytes
        self.stale_after_s = stale_after_s
        self.stats = IndexCacheStats()
        self._slots: dict[str, _Slot] = {}
        self._in_memory: OrderedDict[str, None] = OrderedDict()
        self._memory_weight = 0
        self._lock = threading.Lock()
        self._stripes = [threading.Lock() for _ in range(_STRIPES)]
        self._startup()

    # -- lookups ----------------------------------------------------------------------------

    def get(self, reads: RemoteReads | RemoteStorageManager, segment: RemoteSegment) -> IndexEntry:
        """The segment's indexes: from memory, from the files, or fetched and stored."""
        entry = self._hit(segment)
        if entry is not None:
            return entry
        with self._stripes[hash(segment.segment_id) % _STRIPES]:
            entry = self._hit(segment)  # another thread may have just loaded it
            if entry is not None:
                return entry
            return self._load(_as_reads(reads), segment)

    def lookup_offset(
        self, reads: RemoteReads | RemoteStorageManager, segment: RemoteSegment, offset: int
    ) -> int:
        return self.get(reads, segment).lookup_offset(offset)

    def lookup_timestamp(
        self,
        reads: RemoteReads | RemoteStorageManager,
        segment: RemoteSegment,
        timestamp: int,
        starting_offset: int,
    ) -> int:
        return self.get(reads, segment).lookup_timestamp(timestamp, starting_offset)

    # -- maintenance ------------------------------------------------------------------------

    def remove_all(self, segment_ids: list[str]) -> None:
        """Kafka's removeAll, as the lifecycle's disablement asks for it."""
        self.remove(segment_ids)

    def remove(self, segment_ids: Iterable[str]) -> int:
        """Drop the entries of these segments (Kafka's remove/removeAll); returns how many."""
        removed = 0
        with self._lock:
            self._resync()
            for segment_id in set(segment_ids):
                if segment_id in self._slots:
                    self._drop(self._slots[segment_id])
                    removed += 1
        return removed

    def prune(self, live_segment_ids: Iterable[str]) -> int:
        """Drop every entry whose segment is not in ``live_segment_ids`` (deleted segments)."""
        live = set(live_segment_ids)
        with self._lock:
            self._resync()
            dead = [slot for segment_id, slot in self._slots.items() if segment_id not in live]
            for slot in dead:
                self._drop(slot)
        return len(dead)

    def resize(self, max_bytes: int) -> None:
        """Change the budget (Kafka's resizeCacheSize), evicting at once if it shrank."""
        if max_bytes <= 0:
            raise ValueError(f"index cache size must be positive, got {max_bytes}")
        with self._lock:
            self.max_bytes = max_bytes
            self._resync()
            self._make_room(0, keep=None)

    def accessed_since(self, since_s: float) -> list[str]:
        """Segment ids used at or after ``since_s`` (wall clock seconds), by this or any
        process that touched the files."""
        with self._lock:
            self._resync()
            return [s.segment_id for s in self._slots.values() if s.accessed >= since_s]

    def segment_ids(self) -> list[str]:
        with self._lock:
            return list(self._slots)

    def __contains__(self, segment_id: object) -> bool:
        with self._lock:
            return segment_id in self._slots

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    @property
    def size_bytes(self) -> int:
        """Bytes of the entries this cache knows of (its view of the directory)."""
        with self._lock:
            return sum(slot.size_bytes for slot in self._slots.values())

    def disk_bytes(self) -> int:
        """Bytes of every complete entry in the directory now, whoever wrote it."""
        return sum(found.size_bytes for found in self._scan().values() if is_complete(found))

    # -- internals --------------------------------------------------------------------------

    def _startup(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        stale_before = time.time() - self.stale_after_s
        for path in list(self.directory.iterdir()):
            name = path.name
            if name.endswith(DELETED_SUFFIX) or (
                name.endswith(TMP_SUFFIX) and file_mtime(path) <= stale_before
            ):
                unlink_quietly(path)
        for found in self._scan().values():
            if is_complete(found):
                continue
            if found.mtime <= stale_before:
                log.warning("index cache: removing incomplete entry %s", found.prefix)
                for suffix in found.suffixes:
                    unlink_quietly(self.directory / (found.prefix + suffix))
        with self._lock:
            self._resync()
            self._make_room(0, keep=None)

    def _scan(self) -> dict[str, OnDisk]:
        found: dict[str, OnDisk] = {}
        for path in self.directory.iterdir():
            parsed = parse_file_name(path.name)
            if parsed is None:
                continue
            start, segment_id, suffix = parsed
            try:
                st = path.stat()
            except FileNotFoundError:
                continue  # removed by another process meanwhile
            item = found.setdefault(
                segment_id, OnDisk(file_prefix(start, segment_id), set(), 0, 0.0)
            )
            item.suffixes.add(suffix)
            item.size_bytes += st.st_size
            if suffix == SUFFIXES[IndexType.OFFSET] or not item.mtime:
                item.mtime = st.st_mtime  # the .index mtime records the last access
        return found

    def _resync(self) -> None:
        """Bring the bookkeeping in line with the directory (other processes write to it)."""
        on_disk = {k: v for k, v in self._scan().items() if is_complete(v)}
        for segment_id in list(self._slots):
            if segment_id not in on_disk or on_disk[segment_id].prefix != (
                self._slots[segment_id].prefix
            ):
                self._forget(segment_id)
        for segment_id, found in on_disk.items():
            slot = self._slots.get(segment_id)
            if slot is None:
                self._slots[segment_id] = _Slot(
                    segment_id, found.prefix, found.size_bytes, found.mtime, found.mtime
                )
            else:
                slot.size_bytes = found.size_bytes
                slot.accessed = max(slot.accessed, found.mtime)

    def _hit(self, segment: RemoteSegment) -> IndexEntry | None:
        with self._lock:
            slot = self._slots.get(segment.segment_id)
            if slot is None or slot.entry is None:
                return None
            if slot.stamp != self._stamp(slot.prefix):
                # Changed or removed behind our back (another process, or damage): reload.
                self._unload(slot)
                return None
            self.stats.hits += 1
            self._used(slot)
            self._in_memory.move_to_end(slot.segment_id)
            return slot.entry

    def _load(self, reads: RemoteReads, segment: RemoteSegment) -> IndexEntry:
        started = time.monotonic()
        with self._lock:
            self.stats.misses += 1
        prefix = file_prefix(segment.start_offset, segment.segment_id)
        parsed: dict[IndexType, object] = {}
        sizes: dict[IndexType, int] = {}
        fetched: dict[IndexType, Path] = {}  # checked .tmp files to rename into place
        try:
            for index_type, suffix in SUFFIXES.items():
                path = self.directory / (prefix + suffix)
                if path.exists():
                    try:
                        sizes[index_type] = file_size(path)
                        parsed[index_type] = read_cache_file(index_type, path, segment)
                        continue
                    except KafkaFormatError as exc:
                        log.warning("index cache: %s; fetching it again", exc)
                        with self._lock:
                            self.stats.refetched_corrupt += 1
                tmp = self._fetch_to_tmp(reads, segment, index_type, path)
                fetched[index_type] = tmp
                sizes[index_type] = tmp.stat().st_size
                parsed[index_type] = read_cache_file(index_type, tmp, segment, fetched_as=path.name)
        except BaseException:
            for tmp in fetched.values():
                unlink_quietly(tmp)
            with self._lock:
                self.stats.load_failures += 1
            raise
        entry = IndexEntry(
            segment.segment_id,
            segment.start_offset,
            parsed[IndexType.OFFSET],  # type: ignore[arg-type]
            parsed[IndexType.TIMESTAMP],  # type: ignore[arg-type]
            parsed[IndexType.TRANSACTION],  # type: ignore[arg-type]
            sum(sizes.values()),
        )
        with self._lock:
            self._store(segment, prefix, entry, fetched)
            self.stats.load_successes += 1
            self.stats.load_time_s += time.monotonic() - started
        return entry

    def _fetch_to_tmp(
        self, reads: RemoteReads, segment: RemoteSegment, index_type: IndexType, path: Path
    ) -> Path:
        try:
            data = reads.fetch_index(segment, index_type)
        except RemoteResourceNotFoundError:
            if index_type is not IndexType.TRANSACTION:
                raise
            data = b""  # I4: a segment without aborted transactions has no txn index
        if index_type is IndexType.TRANSACTION:
            # Kafka ignores a trailing partial entry; cache files are whole, so drop it here.
            data = data[: len(data) - len(data) % txn_index.ENTRY.size]
        fd, name = tempfile.mkstemp(dir=self.directory, prefix=path.name + ".", suffix=TMP_SUFFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return Path(name)

    def _store(
        self,
        segment: RemoteSegment,
        prefix: str,
        entry: IndexEntry,
        fetched: dict[IndexType, Path],
    ) -> None:
        """Make room, rename the fetched files into place and record the entry (under lock)."""
        self._resync()
        if entry.size_bytes > self.max_bytes:
            # It cannot fit even alone: serve it from memory and keep nothing on disk.
            log.warning(
                "index cache: %s indexes take %d bytes, more than the %d-byte cache",
                segment.describe(),
                entry.size_bytes,
                self.max_bytes,
            )
            for tmp in fetched.values():
                unlink_quietly(tmp)
            old = self._slots.get(segment.segment_id)
            if old is not None:
                self._drop(old)
            else:
                for suffix in SUFFIXES.values():
                    unlink_quietly(self.directory / (prefix + suffix))
            return
        self._make_room(entry.size_bytes, keep=segment.segment_id)
        for index_type, tmp in fetched.items():
            os.replace(tmp, self.directory / (prefix + SUFFIXES[index_type]))
        fsync_directory(self.directory)
        now = time.time()
        slot = self._slots.get(segment.segment_id)
        if slot is None:
            slot = _Slot(segment.segment_id, prefix, entry.size_bytes, now, now)
            self._slots[segment.segment_id] = slot
        self._unload(slot)
        slot.size_bytes = entry.size_bytes
        slot.stamp = self._stamp(prefix)
        if not slot.stamp:
            # Another process removed a file we had read; serve this lookup, keep nothing.
            self._forget(segment.segment_id)
            return
        slot.entry = entry
        self._used(slot)
        self._in_memory[slot.segment_id] = None
        self._memory_weight += entry.size_bytes
        while self._memory_weight > self.memory_bytes and len(self._in_memory) > 1:
            oldest = next(iter(self._in_memory))
            self._unload(self._slots[oldest])

    def _make_room(self, needed: int, keep: str | None) -> None:
        others = [slot for segment_id, slot in self._slots.items() if segment_id != keep]
        total = sum(slot.size_bytes for slot in others)
        for victim in sorted(others, key=lambda slot: slot.accessed):
            if total + needed <= self.max_bytes:
                break
            self._drop(victim)
            total -= victim.size_bytes
            self.stats.evictions += 1

    def _used(self, slot: _Slot) -> None:
        now = time.time()
        slot.accessed = now
        if now - slot.touched >= TOUCH_INTERVAL_S:
            with contextlib.suppress(OSError):
                os.utime(self.directory / (slot.prefix + SUFFIXES[IndexType.OFFSET]), (now, now))
            slot.touched = now

    def _drop(self, slot: _Slot) -> None:
        """Kafka's markForCleanup then cleanup: rename to .deleted, then delete."""
        self._forget(slot.segment_id)
        for suffix in SUFFIXES.values():
            path = self.directory / (slot.prefix + suffix)
            deleted = path.with_name(path.name + DELETED_SUFFIX)
            try:
                os.replace(path, deleted)
            except FileNotFoundError:
                continue
            unlink_quietly(deleted)

    def _forget(self, segment_id: str) -> None:
        slot = self._slots.pop(segment_id, None)
        if slot is not None:
            self._unload(slot)

    def _unload(self, slot: _Slot) -> None:
        if slot.entry is not None:
            self._memory_weight -= slot.entry.size_bytes
            slot.entry = None
        self._in_memory.pop(slot.segment_id, None)

    def _stamp(self, prefix: str) -> tuple[tuple[int, int], ...]:
        stamp = []
        for suffix in SUFFIXES.values():
            try:
                st = (self.directory / (prefix + suffix)).stat()
            except FileNotFoundError:
                return ()
            stamp.append((st.st_size, st.st_ino))
        return tuple(stamp)


def _as_reads(reads: RemoteReads | RemoteStorageManager) -> RemoteReads:
    return reads if isinstance(reads, RemoteReads) else RemoteReads(reads)


def open_index_cache(settings: Settings) -> RemoteIndexCache:
    """The on-disk cache the settings describe: under ``index_cache_dir`` (default: the data
    dir) and bounded by ``index_cache_bytes`` (default 1 GiB)."""
    return RemoteIndexCache(settings.index_cache_root, settings.index_cache_bytes)
