"""Publishing tierflow's transitions to ``__remote_log_metadata``, exactly once and in order.

Three steps, each safe to kill:
1. *Fill the outbox*: every transition of a tierflow-copied topic not in the outbox yet becomes
   an entry holding its record, in one transaction with the outbox's position.
2. *Recover*: a run killed after the topic took entries but before the store marked them left
   them unmarked; the partition's records after the last marked offset are read, and every
   entry found there byte for byte is marked, not sent again.
3. *Send* the rest in history order, a chunk at a time, marking each chunk as it is acked.

A COPY_SEGMENT_STARTED waits until its segment's copy has ended (FINISHED, or abandoned): the
record carries the segment's largest timestamp and leader epochs, which the copy learns from
the batches it uploads. Kafka's own copy publishes STARTED first; a consumer sees the same
records, in the same order per segment.

Records are unique (a segment id or partition with its state and time), so a byte match is
the entry itself. Entries are sent oldest first and an idempotent producer leaves no gap, so
only the oldest chunk can be taken-but-unmarked: recovery looks at that many entries.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from tierflow.faults import crash_point
from tierflow.kafka.remote_log_metadata.partitioner import metadata_partition
from tierflow.kafka.remote_log_metadata.serde import serialize
from tierflow.kafka.remote_log_metadata.topic import MetadataTopic, PublishError
from tierflow.lifecycle.remote_log_metadata.transitions import record_of
from tierflow.metadata.remote_log_metadata_store import (
    OUTBOX_POSITION,
    OutboxEntry,
    PublishableEvent,
)
from tierflow.metadata.store import MetadataStore

CHUNK = 1000
# PostgreSQL hands out event ids before commit, so ids may commit out of order: the outbox
# looks again this far behind its position for any that committed late.
LOOKBACK_IDS = 10_000


@dataclass(frozen=True)
class PublishReport:
    enqueued: int  # transitions newly put in the outbox
    recovered: int  # entries an earlier, stopped run had published, now marked
    published: int  # entries sent by this run
    waiting: int  # entries still unpublished (0 after a run that finished)


def publish(store: MetadataStore, topic: MetadataTopic, *, chunk: int = CHUNK) -> PublishReport:
    partitions = topic.partitions()
    enqueued = fill_outbox(store, partitions, chunk=chunk)
    recovered = recover(store, topic, chunk=chunk)
    published = send(store, topic, chunk=chunk)
    return PublishReport(enqueued, recovered, published, store.outbox_depth())


def fill_outbox(store: MetadataStore, partitions: int, *, chunk: int = CHUNK) -> int:
    total = 0
    while True:
        position = store.position(OUTBOX_POSITION) or 0
        newest = store.last_event_id()
        found = store.publishable_events(max(0, position - LOOKBACK_IDS), chunk)
        full = len(found) == chunk
        looked = found[-1].event.id if full and found[-1].event.id else newest
        entries = [entry_of(f, partitions) for f in found]
        store.enqueue(entries, looked_through=_held_at(store, max(looked, position)))
        crash_point("rlmm.after_enqueue")
        total += len(found)
        if not full:
            return total


def _held_at(store: MetadataStore, looked: int) -> int:
    """The outbox's new position: never past a COPY_SEGMENT_STARTED held back until its copy
    ends, so that it is looked at again then."""
    held = store.oldest_waiting_started()
    return looked if held is None else min(looked, held - 1)


def entry_of(found: PublishableEvent, partitions: int) -> OutboxEntry:
    event = found.event
    partition = event.partition if event.partition is not None else -1
    return OutboxEntry(
        event_id=int(event.id or 0),
        topic_id=event.topic_id,
        partition=partition,
        metadata_partition=metadata_partition(event.topic_id, partition, partitions),
        payload=serialize(record_of(found)),
    )


def recover(store: MetadataStore, topic: MetadataTopic, *, chunk: int = CHUNK) -> int:
    waiting: dict[int, dict[bytes, int]] = defaultdict(dict)
    for entry in store.unpublished(chunk):
        waiting[entry.metadata_partition][entry.payload] = entry.event_id
    found: list[tuple[int, int]] = []
    for partition, entries in waiting.items():
        for record in topic.read(partition, store.published_through(partition) + 1):
            event_id = entries.pop(record.value, None)
            if event_id is not None:
                found.append((event_id, record.offset))
    store.mark_published(found)
    return len(found)


def send(store: MetadataStore, topic: MetadataTopic, *, chunk: int = CHUNK) -> int:
    total = 0
    while entries := store.unpublished(chunk):
        try:
            offsets = topic.publish([(e.metadata_partition, e.payload) for e in entries])
        except PublishError as error:
            store.mark_published(zip((e.event_id for e in entries), error.offsets, strict=False))
            raise
        crash_point("rlmm.after_send")
        store.mark_published(zip((e.event_id for e in entries), offsets, strict=True))
        total += len(entries)
    return total
