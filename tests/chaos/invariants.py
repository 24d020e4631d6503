"""The five invariants every rerun of a killed operation must restore.

Checked from what a reader or an operator sees afterwards, never from the run's own reports:
the broker's files, the bucket, the store's rows and its event history. The pristine log dir
(read before the operation ran) is the reference for bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.config import Settings
from tierflow.kafka.log_dir import PartitionLog
from tierflow.kafka.record_batch import iter_batches
from tierflow.lifecycle.retention.local import segment_files
from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import MetadataEvent, RemoteLogSegment, Topic
from tierflow.metadata.partition_registry import PARTITION_OFFSETS_ADVANCED, PARTITION_REGISTERED
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.states import RemotePartitionDeleteState as P
from tierflow.metadata.states import (
    TieredState,
    is_valid_partition_delete_transition,
    is_valid_segment_transition,
    is_valid_tiered_transition,
)
from tierflow.metadata.store import MetadataStore
from tierflow.read.fetch import FetchRequest, fetch_remote
from tierflow.read.index_cache.memory import RemoteIndexCache
from tierflow.read.metadata_cache import RemoteLogMetadataCache
from tierflow.rsm import ObjectInfo, RemoteStorageManager
from tierflow.runtime import open_objects, open_storage, open_store, partition_logs
from tierflow.segment_refs import remote_segment
from tierflow.storage.object_store import ObjectStore

READABLE = "readable"
NO_ORPHANS = "no-orphans"
COMPLETE = "complete"
LOCAL_AFTER_REMOTE = "local-after-remote"
HISTORY = "history"
INVARIANTS: dict[str, str] = {
    READABLE: "every offset in [log start, high watermark) reads back byte-identical",
    NO_ORPHANS: "every object in the bucket belongs to a segment the store knows",
    COMPLETE: "every COPY_SEGMENT_FINISHED segment has its objects, sizes and sha256",
    LOCAL_AFTER_REMOTE: "no local segment deleted before its remote copy was verified",
    HISTORY: "the event history is a valid path through the state machines",
}
PartitionKey = tuple[str, int]


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


@dataclass(frozen=True)
class PristineBatch:
    segment_base: int
    position: int
    base_offset: int
    last_offset: int
    records: int
    data: bytes


@dataclass
class PristinePartition:
    """A partition as the broker wrote it: the reference every read is compared with."""

    high_watermark: int
    segment_files: dict[int, list[str]]  # base offset -> names of the files it had
    batches: list[PristineBatch]


@dataclass
class CheckResult:
    violations: list[Violation] = field(default_factory=list)
    records_verified: int = 0

    def add(self, invariant: str, detail: str) -> None:
        self.violations.append(Violation(invariant, detail))

    def held(self, invariant: str) -> bool:
        return not any(v.invariant == invariant for v in self.violations)


def read_pristine(log_dirs: Iterable[Path]) -> dict[PartitionKey, PristinePartition]:
    """Every batch of every partition, with its bytes, before the operation touched anything."""
    found = {}
    for log_ in partition_logs(tuple(log_dirs)):
        batches, files = [], {}
        for segment in log_.segments():
            files[segment.base_offset] = [
                p.name for p in segment_files(log_, segment.base_offset) if p.is_file()
            ]
            data = segment.log_path.read_bytes()
            for header in iter_batches(segment.log_path):
                batches.append(
                    PristineBatch(
                        segment.base_offset,
                        header.position,
                        header.base_offset,
                        header.last_offset,
                        header.records_count or header.last_offset - header.base_offset + 1,
                        data[header.position : header.end_position],
                    )
                )
        found[log_.key] = PristinePartition(log_.high_watermark() or 0, files, batches)
    return found


def check_invariants(
    settings: Settings, pristine: dict[PartitionKey, PristinePartition]
) -> CheckResult:
    """All five, each independent of the others' outcome."""
    result = CheckResult()
    store = open_store(settings)
    try:
        rsm, objects = open_storage(settings), open_objects(settings)
        logs = {log_.key: log_ for log_ in partition_logs(settings.log_dirs)}
        check_readable(store, rsm, logs, pristine, result)
        check_no_orphans(store, objects, result)
        check_complete(store, rsm, objects, result)
        check_local_after_remote(store, logs, pristine, result)
        check_history(store, result)
    finally:
        store.close()
    return result


# -- 1. every offset reads back ---------------------------------------------------------------


class _RemoteBatches:
    """Batches fetched from remote storage as a consumer would, cached by base offset."""

    def __init__(self, store: MetadataStore, rsm: RemoteStorageManager, topic: Topic, number: int):
        self.store, self.rsm, self.topic, self.number = store, rsm, topic, number
        self.metadata = RemoteLogMetadataCache.load(store, topic.topic_id, number)
        self.index_cache = RemoteIndexCache()
        self.fetched: dict[int, bytes] = {}

    def batch(self, base_offset: int, offset: int) -> bytes | str:
        """The stored batch starting at ``base_offset`` (fetched from ``offset``), or why not."""
        if base_offset not in self.fetched:
            try:
                result = fetch_remote(
                    self.store,
                    self.rsm,
                    FetchRequest(self.topic.name, self.number, offset=offset),
                    metadata=self.metadata,
                    index_cache=self.index_cache,
                )
            except Exception as exc:
                return f"{type(exc).__name__}: {exc}"
            for found in result.found:
                self.fetched[found.header.base_offset] = found.data
        return self.fetched.get(base_offset, "the remote fetch did not return it")


class _LocalFiles:
    """The broker's current .log files, read once each."""

    def __init__(self, log_: PartitionLog | None) -> None:
        self.log_ = log_
        self.files: dict[int, bytes | None] = {}

    def batch(self, batch: PristineBatch) -> bytes | None:
        if self.log_ is None:
            return None
        if batch.segment_base not in self.files:
            path = self.log_.path / f"{batch.segment_base:020d}.log"
            self.files[batch.segment_base] = path.read_bytes() if path.is_file() else None
        data = self.files[batch.segment_base]
        return None if data is None else data[batch.position : batch.position + len(batch.data)]


def check_readable(
    store: MetadataStore,
    rsm: RemoteStorageManager,
    logs: dict[PartitionKey, PartitionLog],
    pristine: dict[PartitionKey, PristinePartition],
    result: CheckResult,
) -> None:
    """Below the local log start offset a reader is sent to remote storage (as Kafka sends it),
    at or above it to the local segment; either must return the original batch."""
    for (name, number), part in pristine.items():
        topic = store.topic(name)
        if store.partition_delete(topic.topic_id, number) is not None:
            continue  # deleted in Kafka: nothing may be read any more
        state = store.partition(topic.topic_id, number)
        log_ = logs.get((name, number))
        log_start = max(
            state.log_start_offset if state else 0, log_.log_start_offset() if log_ else 0
        )
        local_start = state.local_log_start_offset if state else 0
        local, remote = _LocalFiles(log_), _RemoteBatches(store, rsm, topic, number)
        for batch in part.batches:
            if batch.last_offset < log_start or batch.base_offset >= part.high_watermark:
                continue
            found: bytes | str | None = None
            if batch.base_offset >= local_start:
                found = local.batch(batch)
            if found is None:
                found = remote.batch(batch.base_offset, max(batch.base_offset, log_start))
            if found != batch.data:
                why = found if isinstance(found, str) else "bytes differ"
                result.add(
                    READABLE,
                    f"{name}-{number} offsets {batch.base_offset}-{batch.last_offset} "
                    f"(log start {log_start}, local start {local_start}): {why}",
                )
                continue
            first = max(batch.base_offset, log_start)
            last = min(batch.last_offset, part.high_watermark - 1)
            result.records_verified += min(batch.records, last - first + 1)


# -- 2. no orphans ----------------------------------------------------------------------------


def _all_segments(store: MetadataStore) -> list[tuple[Topic, RemoteLogSegment]]:
    return [
        (topic, row)
        for topic in store.topics()
        for partition in store.partitions(topic.topic_id)
        for row in store.segments(topic.topic_id, partition.partition)
    ]


def check_no_orphans(store: MetadataStore, objects: ObjectStore, result: CheckResult) -> None:
    """After a zero-grace reconcile, every key is a recorded object of a FINISHED segment."""
    known = {
        obj.key
        for _topic, row in _all_segments(store)
        if row.state == S.COPY_SEGMENT_FINISHED
        for obj in store.segment_objects(row.segment_id)
    }
    for key in sorted(set(objects.list("")) - known):
        result.add(NO_ORPHANS, f"{key}: no COPY_SEGMENT_FINISHED segment records it")


# -- 3. finished means complete ---------------------------------------------------------------


def check_complete(
    store: MetadataStore, rsm: RemoteStorageManager, objects: ObjectStore, result: CheckResult
) -> None:
    for topic, row in _all_segments(store):
        if row.state != S.COPY_SEGMENT_FINISHED:
            continue
        ref = remote_segment(topic, row)
        recorded = store.segment_objects(row.segment_id)
        required = set(rsm.object_keys(ref))
        if row.txn_index_empty:
            required = {key for key in required if not key.endswith(".txnindex")}
        for key in sorted(required - {o.key for o in recorded}):
            result.add(COMPLETE, f"segment {row.segment_id}: {key} not recorded")
        for obj in recorded:
            problem = _object_problem(objects, obj.key, obj.size, obj.sha256)
            if problem:
                result.add(COMPLETE, f"segment {row.segment_id}: {obj.key}: {problem}")
        try:
            rsm.verify(ref, [ObjectInfo(o.key, o.size, o.sha256) for o in recorded])
        except Exception as exc:
            result.add(COMPLETE, f"segment {row.segment_id}: verify: {exc}")


def _object_problem(objects: ObjectStore, key: str, size: int, sha256: str) -> str | None:
    if objects.stat(key) is None:
        return "missing"
    data = objects.read_range(key)
    if len(data) != size:
        return f"{len(data)} bytes, recorded {size}"
    if hashlib.sha256(data).hexdigest() != sha256:
        return "sha256 differs from the recorded one"
    return None


# -- 4. local deletions only after a verified remote copy -------------------------------------


def check_local_after_remote(
    store: MetadataStore,
    logs: dict[PartitionKey, PartitionLog],
    pristine: dict[PartitionKey, PristinePartition],
    result: CheckResult,
) -> None:
    """Local retention advances the local log start (an event) before it unlinks: a segment
    whose files are gone needs that event, and COPY_SEGMENT_FINISHED remote segments covering
    all its offsets, recorded (objects verified) before it and not deleted by then."""
    for (name, number), part in pristine.items():
        log_ = logs.get((name, number))
        if log_ is None:
            continue
        topic = store.topic(name)
        events = store.events(topic_id=topic.topic_id, partition=number)
        bases = sorted(part.segment_files)
        for i, base in enumerate(bases):
            present = [n for n in part.segment_files[base] if (log_.path / n).is_file()]
            if len(present) == len(part.segment_files[base]):
                continue
            where = f"{name}-{number} segment {base:020d}"
            if f"{base:020d}.log" in present:
                result.add(LOCAL_AFTER_REMOTE, f"{where}: partly deleted, .log still there")
                continue
            if i + 1 == len(bases):
                result.add(LOCAL_AFTER_REMOTE, f"{where}: the active segment was deleted")
                continue
            why = _deleted_too_early(store, events, base, bases[i + 1])
            if why:
                result.add(LOCAL_AFTER_REMOTE, f"{where}: {why}")


def _deleted_too_early(
    store: MetadataStore, events: list[MetadataEvent], base: int, next_base: int
) -> str | None:
    moved = next(
        (
            e
            for e in events
            if e.entity == EventEntity.PARTITION
            and e.to_state == PARTITION_OFFSETS_ADVANCED
            and _details(e).get("local_log_start_offset", [0, 0])[1] >= next_base
        ),
        None,
    )
    if moved is None:
        return "deleted, but the local log start offset never moved past it"
    live: dict[str, RemoteLogSegment] = {}
    for event in events:
        if event.id is None or moved.id is None or event.id >= moved.id:
            break
        if event.entity != EventEntity.SEGMENT or event.segment_id is None:
            continue
        if event.to_state == S.COPY_SEGMENT_FINISHED:
            live[event.segment_id] = store.segment(event.segment_id)
        elif event.to_state in (S.DELETE_SEGMENT_STARTED, S.DELETE_SEGMENT_FINISHED):
            live.pop(event.segment_id, None)
    cursor = base
    for row in sorted(live.values(), key=lambda r: r.start_offset):
        if row.start_offset <= cursor <= row.end_offset:
            cursor = row.end_offset + 1
    if cursor < next_base:
        return (
            f"offset {cursor} had no COPY_SEGMENT_FINISHED remote copy when the local log "
            f"start moved to {_details(moved)['local_log_start_offset'][1]} (event {moved.id})"
        )
    return None


def _details(event: MetadataEvent) -> dict:
    return json.loads(event.details) if event.details else {}


# -- 5. the history is a path through the state machines --------------------------------------


def check_history(store: MetadataStore, result: CheckResult) -> None:
    """Every chain of events starts from nothing, takes only valid transitions, ends at the
    row's state, and (after the rerun) at rest: nothing left STARTED or DISABLING."""
    events = store.events()
    by_segment: dict[str, list[MetadataEvent]] = defaultdict(list)
    by_removal: dict[PartitionKey, list[MetadataEvent]] = defaultdict(list)
    by_topic: dict[str, list[MetadataEvent]] = defaultdict(list)
    by_partition: dict[PartitionKey, list[MetadataEvent]] = defaultdict(list)
    for event in events:
        if event.entity == EventEntity.SEGMENT and event.segment_id:
            by_segment[event.segment_id].append(event)
        elif event.entity == EventEntity.PARTITION_DELETE:
            by_removal[(event.topic_id, event.partition or 0)].append(event)
        elif event.entity == EventEntity.TOPIC:
            by_topic[event.topic_id].append(event)
        elif event.entity == EventEntity.PARTITION:
            by_partition[(event.topic_id, event.partition or 0)].append(event)
    _check_segments(store, by_segment, result)
    _check_removals(store, by_removal, result)
    _check_topics(store, by_topic, result)
    _check_offsets(store, by_partition, result)


def _walk(events: list[MetadataEvent], valid, what: str, result: CheckResult) -> str | None:
    """The state the chain ends in; each broken link is a violation."""
    previous = None
    for event in events:
        if event.from_state != previous:
            result.add(
                HISTORY,
                f"{what}: event {event.id} from {event.from_state}, but the state was {previous}",
            )
        if not valid(previous, event.to_state):
            result.add(HISTORY, f"{what}: event {event.id} {previous} -> {event.to_state}")
        previous = event.to_state
    return previous


def _check_segments(
    store: MetadataStore, chains: dict[str, list[MetadataEvent]], result: CheckResult
) -> None:
    rows = {row.segment_id: row for _topic, row in _all_segments(store)}
    for segment_id in sorted(set(rows) | set(chains)):
        what = f"segment {segment_id}"
        row = rows.get(segment_id)
        end = _walk(chains.get(segment_id, []), is_valid_segment_transition, what, result)
        if row is None:
            result.add(HISTORY, f"{what}: has events but no row")
        elif end != row.state:
            result.add(HISTORY, f"{what}: history ends at {end}, the row is {row.state}")
        elif row.state in (S.COPY_SEGMENT_STARTED, S.DELETE_SEGMENT_STARTED):
            result.add(HISTORY, f"{what}: left {row.state} after the rerun")


def _check_removals(
    store: MetadataStore, chains: dict[PartitionKey, list[MetadataEvent]], result: CheckResult
) -> None:
    for (topic_id, number), chain in sorted(chains.items()):
        what = f"removal of {topic_id}-{number}"
        end = _walk(chain, is_valid_partition_delete_transition, what, result)
        row = store.partition_delete(topic_id, number)
        if row is None or end != row.state:
            result.add(HISTORY, f"{what}: history ends at {end}, the row is {row}")
        elif row.delete_state is P.DELETE_PARTITION_STARTED:
            result.add(HISTORY, f"{what}: left DELETE_PARTITION_STARTED after the rerun")


def _check_topics(
    store: MetadataStore, chains: dict[str, list[MetadataEvent]], result: CheckResult
) -> None:
    for topic_id, chain in sorted(chains.items()):
        what = f"topic {topic_id}"
        end = _walk(chain, is_valid_tiered_transition, what, result)
        topic = store.topic_by_id(topic_id)
        if end != topic.tiered_state:
            result.add(HISTORY, f"{what}: history ends at {end}, the row is {topic.tiered_state}")
        elif topic.tiered_state == TieredState.DISABLING:
            result.add(HISTORY, f"{what}: left DISABLING after the rerun")


_START_OFFSETS = ("log_start_offset", "local_log_start_offset")


def _check_offsets(
    store: MetadataStore, chains: dict[PartitionKey, list[MetadataEvent]], result: CheckResult
) -> None:
    """Start offsets only move forward, each move continues from the last, and the local log
    start never falls below the log start (Kafka's localLogStartOffset >= logStartOffset)."""
    for (topic_id, number), chain in sorted(chains.items()):
        what = f"partition {topic_id}-{number}"
        values: dict[str, int] = {}
        for event in chain:
            details = _details(event)
            if event.to_state == PARTITION_REGISTERED:
                values = {name: details[name] for name in _START_OFFSETS if name in details}
                continue
            if event.to_state != PARTITION_OFFSETS_ADVANCED:
                continue
            for name in _START_OFFSETS:
                if name not in details:
                    continue
                old, new = details[name]
                if new <= old or values.get(name, old) != old:
                    result.add(
                        HISTORY,
                        f"{what}: event {event.id} moves {name} {old} -> {new}, "
                        f"it was {values.get(name)}",
                    )
                values[name] = new
        row = store.partition(topic_id, number)
        if row is None:
            continue
        for name in _START_OFFSETS:
            if name in values and values[name] != getattr(row, name):
                result.add(HISTORY, f"{what}: history ends at {name}={values[name]}, row differs")
        if row.local_log_start_offset < row.log_start_offset:
            result.add(HISTORY, f"{what}: local log start below the log start offset")
