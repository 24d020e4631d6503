"""Retention of diskless partitions: ``retention.ms`` and ``retention.bytes`` over the batches.

Kafka's rules (UnifiedLog.deleteRetentionMsBreachedSegments / ...SizeBreached...), applied per
batch instead of per segment, since a batch is the unit a WAL object holds:

- time: the oldest batches whose max timestamp (the append time for LogAppendTime topics) is
  more than ``retention.ms`` old, stopping at the first that is not;
- size: the oldest batches, as long as what remains is still at least ``retention.bytes``.

The longer of the two prefixes is deleted (logically: see ``truncation``), and the log start
offset moves past it. The size counts the WAL's live batches only: tiered segments of the same
partition hold older offsets, so remote retention deletes them before any WAL batch would be.
Each call looks at no more than ``max_batches`` of a partition's oldest batches, so a large
backlog is worked off over several runs, each one short.
"""

from __future__ import annotations

from dataclasses import dataclass

from tierflow.diskless.coordinates import BatchCoordinate, PrefixDeletion
from tierflow.diskless.coordinator import DisklessCoordinator
from tierflow.metadata.store import MetadataStore

DEFAULT_MAX_BATCHES = 2000


@dataclass(frozen=True)
class RetentionCut:
    """Where retention cuts a partition: below ``offset`` (None: nothing to delete)."""

    offset: int | None
    by_time: int  # batches breaching retention.ms
    by_size: int  # batches breaching retention.bytes


def retention_cut(
    batches: list[BatchCoordinate],
    *,
    log_bytes: int,
    retention_ms: int,
    retention_bytes: int,
    now_ms: int,
) -> RetentionCut:
    """The cut for a partition's oldest ``batches`` (offset order) holding ``log_bytes`` in all."""
    by_time = 0
    if retention_ms >= 0:
        for batch in batches:
            if now_ms - batch.effective_timestamp <= retention_ms:
                break
            by_time += 1
    by_size = 0
    if retention_bytes >= 0:
        remaining = log_bytes
        for batch in batches:
            if remaining - batch.byte_size < retention_bytes:
                break
            remaining -= batch.byte_size
            by_size += 1
    count = max(by_time, by_size)
    offset = batches[count - 1].last_offset + 1 if count else None
    return RetentionCut(offset, by_time, by_size)


def enforce_retention(
    coordinator: DisklessCoordinator,
    *,
    now_ms: int,
    delete_grace_ms: int,
    topic_id: str | None = None,
    max_batches: int = DEFAULT_MAX_BATCHES,
) -> list[PrefixDeletion]:
    """Apply each diskless partition's retention (of one topic, or all); rerunning is safe."""
    deletions: list[PrefixDeletion] = []
    for log in coordinator.logs(topic_id):
        topic = coordinator.topic_row(log.topic_id)
        batches = coordinator.partition_batches(log.topic_id, log.partition, limit=max_batches)
        cut = retention_cut(
            batches,
            log_bytes=log.byte_size,
            retention_ms=topic.retention_ms,
            retention_bytes=topic.retention_bytes,
            now_ms=now_ms,
        )
        if cut.offset is None:
            continue
        deletions.append(
            coordinator.delete_batches_below(
                log.topic_id,
                log.partition,
                cut.offset,
                now_ms=now_ms,
                delete_grace_ms=delete_grace_ms,
                advance_log_start=True,
            )
        )
    return deletions


def follow_tiered_log_start(
    coordinator: DisklessCoordinator,
    store: MetadataStore,
    *,
    now_ms: int,
    delete_grace_ms: int,
    topic_id: str | None = None,
) -> list[PrefixDeletion]:
    """Move each diskless log start offset up to the tiered one (forward only).

    Remote retention deletes a consolidated topic's oldest tiered segments and moves the
    partition's log start offset in the metadata store (Kafka's updateRemoteLogStartOffset);
    the coordinator, which answers fetches and ListOffsets(EARLIEST) for the partition, must
    follow, as Inkless reports the remote log start to its control plane. Offsets below the WAL
    start hold no WAL batch, so nothing but the offset moves.
    """
    moved: list[PrefixDeletion] = []
    for log in coordinator.logs(topic_id):
        tiered = store.partition(log.topic_id, log.partition)
        if tiered is None or tiered.log_start_offset <= log.log_start_offset:
            continue
        target = min(tiered.log_start_offset, log.diskless_start_offset)
        if target <= log.log_start_offset:
            continue
        moved.append(
            coordinator.delete_batches_below(
                log.topic_id,
                log.partition,
                target,
                now_ms=now_ms,
                delete_grace_ms=delete_grace_ms,
                advance_log_start=True,
            )
        )
    return moved
