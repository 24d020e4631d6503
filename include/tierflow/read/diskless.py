"""Fetching from a diskless partition by offset (KIP-1163, "Consume path").

1. Look the batch coordinates up in the coordinator (``plan_fetch``).
2. Make one ranged GET per contiguous run: batches of a partition that lie next to each other
   in the same object, which the format's per-partition runs make the common case.
3. Inject each batch's assigned base offset and partition leader epoch in memory (both lie
   before the CRC-covered bytes), and for LogAppendTime topics the append time, as Kafka's
   LogValidator would (that one does change the CRC, so it is recomputed).

The result is byte for byte what a classic segment holds for those offsets. Offsets below the
WAL start (``diskless_start_offset``) are read from tiered segments through the tiered read
path (``tierflow.read.fetch.fetch_remote``), and the fetch continues into the WAL where they end.

The two steps are separate so that a fetch holding its coordinates can be shown to survive a
concurrent retention run: the object it reads stays until the deletion grace period is over.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tierflow.diskless.coordinates import BatchCoordinate
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.diskless.errors import DisklessError, DisklessOffsetOutOfRangeError
from tierflow.diskless.wal_reads import next_offset, read_run, runs
from tierflow.metadata.store import MetadataStore
from tierflow.read.fetch import DEFAULT_MAX_BYTES, FetchRequest, FetchResult, fetch_remote
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.object_store import ObjectStore


@dataclass(frozen=True)
class FetchPlan:
    """The coordinates a fetch will read, and the partition's offsets when it looked."""

    topic: str
    topic_id: str
    partition: int
    offset: int
    log_start_offset: int
    diskless_start_offset: int
    high_watermark: int
    batches: list[BatchCoordinate]


@dataclass
class DisklessFetchResult:
    topic: str
    partition: int
    batches: list[bytes]  # whole record batches, as a classic segment holds them
    first_offset: int
    next_offset: int
    high_watermark: int
    log_start_offset: int
    ranged_gets: int = 0
    bytes_read: int = 0
    objects_read: list[str] = field(default_factory=list)
    tiered: FetchResult | None = None  # the part read from tiered segments, if any

    @property
    def size_in_bytes(self) -> int:
        return sum(len(batch) for batch in self.batches)


def plan_fetch(
    coordinator: DisklessCoordinator,
    topic_id: str,
    partition: int,
    offset: int,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> FetchPlan:
    """Coordinates of the WAL batches from ``offset`` (which must be at or past the WAL
    start); raises DisklessOffsetOutOfRangeError outside [log start, high watermark]."""
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    log = coordinator.log(topic_id, partition)
    name = coordinator.topic_row(topic_id).name
    if offset < log.log_start_offset or offset > log.high_watermark:
        raise DisklessOffsetOutOfRangeError(
            name, partition, offset, log.log_start_offset, log.high_watermark
        )
    batches: list[BatchCoordinate] = []
    if offset < log.high_watermark:
        batches = coordinator.find_batches(topic_id, partition, offset, max_bytes)
        if not batches or batches[0].base_offset > offset:
            # Retention deleted them between the two reads: the log start has moved.
            log = coordinator.log(topic_id, partition)
            raise DisklessOffsetOutOfRangeError(
                name, partition, offset, log.log_start_offset, log.high_watermark
            )
    return FetchPlan(
        topic=name,
        topic_id=topic_id,
        partition=partition,
        offset=offset,
        log_start_offset=log.log_start_offset,
        diskless_start_offset=log.diskless_start_offset,
        high_watermark=log.high_watermark,
        batches=batches,
    )


def read_planned(objects: ObjectStore, plan: FetchPlan) -> DisklessFetchResult:
    """Fetch the planned batches: one ranged GET per run, offsets injected."""
    result = DisklessFetchResult(
        topic=plan.topic,
        partition=plan.partition,
        batches=[],
        first_offset=plan.batches[0].base_offset if plan.batches else plan.offset,
        next_offset=plan.batches[-1].last_offset + 1 if plan.batches else plan.offset,
        high_watermark=plan.high_watermark,
        log_start_offset=plan.log_start_offset,
    )
    for run in runs(plan.batches):
        key = run[0].object_key
        batches = read_run(objects, run)
        result.ranged_gets += 1
        result.bytes_read += run[-1].byte_end - run[0].byte_offset
        if key not in result.objects_read:
            result.objects_read.append(key)
        result.batches.extend(batches)
    return result


def fetch_diskless(
    coordinator: DisklessCoordinator,
    objects: ObjectStore,
    topic: str,
    partition: int,
    offset: int,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    store: MetadataStore | None = None,
    rsm: RemoteStorageManager | None = None,
) -> DisklessFetchResult:
    """Whole batches from ``offset``, up to ``max_bytes`` (at least one batch).

    Offsets below the WAL start come from tiered segments (``store`` and ``rsm`` needed), and
    the fetch goes on into the WAL when the tiered segments end at the WAL start.
    """
    topic_id = coordinator.topic_id_of(topic)
    log = coordinator.log(topic_id, partition)
    if offset < log.log_start_offset or offset > log.high_watermark:
        raise DisklessOffsetOutOfRangeError(
            topic, partition, offset, log.log_start_offset, log.high_watermark
        )
    if offset >= log.diskless_start_offset:
        plan = plan_fetch(coordinator, topic_id, partition, offset, max_bytes=max_bytes)
        return read_planned(objects, plan)
    if store is None or rsm is None:
        raise DisklessError(
            f"{topic}-{partition}: offset {offset} is below the WAL start "
            f"{log.diskless_start_offset}, in tiered storage; no tiered storage was given"
        )
    tiered = fetch_remote(
        store, rsm, FetchRequest(topic, partition, offset=offset, max_bytes=max_bytes)
    )
    left = max_bytes - tiered.size_in_bytes
    if tiered.next_offset < log.diskless_start_offset and (left > 0 or not tiered.batches):
        raise DisklessError(
            f"{topic}-{partition}: tiered segments end at offset {tiered.next_offset - 1} but "
            f"the WAL starts at {log.diskless_start_offset}: offsets in between are missing"
        )
    result = DisklessFetchResult(
        topic=topic,
        partition=partition,
        batches=list(tiered.batches),
        first_offset=tiered.first_offset,
        next_offset=tiered.next_offset,
        high_watermark=log.high_watermark,
        log_start_offset=log.log_start_offset,
        tiered=tiered,
    )
    if left > 0 and tiered.next_offset < log.high_watermark:
        plan = plan_fetch(coordinator, topic_id, partition, tiered.next_offset, max_bytes=left)
        _continue_into_wal(result, read_planned(objects, plan), left)
    return result


def _continue_into_wal(result: DisklessFetchResult, wal: DisklessFetchResult, left: int) -> None:
    """Append the WAL's batches after the tiered ones: only whole batches that fit, since the
    tiered part already satisfied minOneMessage."""
    taken = 0
    for batch in wal.batches:
        if taken + len(batch) > left:
            break
        result.batches.append(batch)
        taken += len(batch)
        result.next_offset = next_offset(batch)
    result.ranged_gets = wal.ranged_gets
    result.bytes_read = wal.bytes_read
    result.objects_read = wal.objects_read
