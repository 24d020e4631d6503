"""The WAL writer: buffer produce requests, upload one WAL object, commit its batches.

KIP-1163's produce path, steps 2-7: requests for any partitions accumulate until the buffer
holds ``buffer_max_bytes`` or ``commit_interval_ms`` has passed since the first of them; then
the buffer becomes one WAL object (version byte, per-partition runs), which is registered with
the coordinator, uploaded under a fresh UUID name, and committed. Only the commit assigns
offsets, and only then do the requests get their answers.

If the upload fails nothing was committed: the requests fail and may be retried. If the upload
succeeded but the commit failed (or the process died in between), the object stays registered
as uploading; the garbage collector deletes it after the uncommitted grace period. Retrying
such requests may duplicate them, as for a classic topic without idempotence: producer
idempotence on diskless topics is not implemented yet.

Synchronous by design: no threads. A caller feeding requests continuously calls ``poll()``
between them (the interval is checked then) and ``close()`` at the end.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

from tierflow.diskless.coordinates import BatchCoordinate
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.wal_object import (
    HEADER_SIZE,
    ProduceBatch,
    encode_wal_object,
    producer_batch,
)
from tierflow.faults import crash_point
from tierflow.metadata.store_base import wall_clock_ms
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.wal_keys import new_wal_object_key

Clock = Callable[[], int]


@dataclass
class ProduceResult:
    """The answer to one produce request, filled in when its WAL object is committed."""

    topic_id: str
    partition: int
    size: int
    coordinate: BatchCoordinate | None = None
    error: BaseException | None = None

    @property
    def done(self) -> bool:
        return self.coordinate is not None or self.error is not None

    @property
    def base_offset(self) -> int | None:
        return None if self.coordinate is None else self.coordinate.base_offset


@dataclass(frozen=True)
class FlushResult:
    object_key: str
    object_size: int
    batches: list[BatchCoordinate]


@dataclass
class _Pending:
    batch: ProduceBatch
    result: ProduceResult


@dataclass
class WriterStats:
    objects: int = 0
    batches: int = 0
    bytes: int = 0
    committed: list[FlushResult] = field(default_factory=list)


def default_writer_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class WalWriter:
    def __init__(
        self,
        coordinator: DisklessCoordinator,
        objects: ObjectStore,
        *,
        storage_prefix: str = "",
        buffer_max_bytes: int,
        commit_interval_ms: int,
        clock: Clock = wall_clock_ms,
        writer_id: str | None = None,
        keep_results: bool = True,
    ) -> None:
        if buffer_max_bytes < 1 or commit_interval_ms < 0:
            raise ValueError("buffer_max_bytes must be >= 1 and commit_interval_ms >= 0")
        self.coordinator = coordinator
        self.objects = objects
        self.storage_prefix = storage_prefix
        self.buffer_max_bytes = buffer_max_bytes
        self.commit_interval_ms = commit_interval_ms
        self.clock = clock
        self.writer_id = writer_id or default_writer_id()
        self.keep_results = keep_results
        self.stats = WriterStats()
        self._pending: list[_Pending] = []
        self._buffered = HEADER_SIZE
        self._first_ms: int | None = None
        self._known: set[tuple[str, int]] = set()

    @property
    def buffered_bytes(self) -> int:
        """The size the WAL object would have if flushed now (0 when empty)."""
        return self._buffered if self._pending else 0

    def append(
        self,
        topic_id: str,
        partition: int,
        data: bytes,
        *,
        source: str = "produce request",
        position: int = 0,
    ) -> ProduceResult:
        """Buffer one batch; flushes first when it would not fit, and after when full.

        ``source`` and ``position`` name where the batch came from in errors.
        """
        self._check_partition(topic_id, partition)
        batch = producer_batch(topic_id, partition, data, source=source, position=position)
        if self._pending and self._buffered + batch.size > self.buffer_max_bytes:
            self.flush()
        if not self._pending:
            self._first_ms = self.clock()
        result = ProduceResult(topic_id, partition, batch.size)
        self._pending.append(_Pending(batch, result))
        self._buffered += batch.size
        if self._buffered >= self.buffer_max_bytes:
            self.flush()
        return result

    def poll(self) -> FlushResult | None:
        """Flush when the commit interval has passed since the first buffered request."""
        first = self._first_ms
        if self._pending and first is not None and self.clock() - first >= self.commit_interval_ms:
            return self.flush()
        return None

    def flush(self) -> FlushResult | None:
        """Upload and commit what is buffered; every buffered request gets its answer."""
        if not self._pending:
            return None
        pending, self._pending = self._pending, []
        self._buffered, self._first_ms = HEADER_SIZE, None
        # encode_wal_object orders runs by (topic id, partition), keeping arrival order within
        # a run: a stable sort of the requests gives the same order as its placements.
        pending.sort(key=lambda p: (p.batch.topic_id, p.batch.partition))
        wal = encode_wal_object(p.batch for p in pending)
        key = new_wal_object_key(self.storage_prefix)
        try:
            self.coordinator.register_object(
                key, wal.size, writer=self.writer_id, now_ms=self.clock()
            )
            crash_point("diskless.writer.after_register")
            self.objects.put_bytes(key, wal.data)
            crash_point("diskless.writer.after_upload")
            committed = self.coordinator.commit_object(key, wal.batches, now_ms=self.clock())
            crash_point("diskless.writer.after_commit")
        except BaseException as exc:
            for item in pending:
                item.result.error = exc
            raise
        for item, coordinate in zip(pending, committed, strict=True):
            item.result.coordinate = coordinate
        flushed = FlushResult(key, wal.size, committed)
        self.stats.objects += 1
        self.stats.batches += len(committed)
        self.stats.bytes += wal.size
        if self.keep_results:
            self.stats.committed.append(flushed)
        return flushed

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> WalWriter:
        return self

    def __exit__(self, exc_type: object, *_rest: object) -> None:
        if exc_type is None:
            self.close()

    def _check_partition(self, topic_id: str, partition: int) -> None:
        """Fail a request for a partition that is not diskless before anything is uploaded."""
        if (topic_id, partition) not in self._known:
            self.coordinator.log(topic_id, partition)  # raises UnknownDisklessPartitionError
            self._known.add((topic_id, partition))
