"""A broker log dir and store with thousands of partitions, built in seconds.

The operator view must stay usable at cluster scale (issue 14); its tests and
``benchmarks/operator_view_scale.py`` need many partitions, and the demo generator writes
real record batches for each one. So one partition is generated for real
(``tierflow.demo.broker``) and every other partition directory hard-links its segment files,
with its own ``partition.metadata`` and entries in the root checkpoints. The store rows are
bulk-inserted as the copy would have left them, and vary by partition number so that every
partition's figures differ:

* partition ``p`` has ``p % (segments + 1)`` rolled segments COPY_SEGMENT_FINISHED (so its
  copy lag varies), each with its object rows and its STARTED/FINISHED events;
* every ``STUCK_EVERY``-th partition has its next segment COPY_SEGMENT_STARTED long ago;
* every ``DELETING_EVERY``-th partition with a finished segment has its first one in
  DELETE_SEGMENT_STARTED.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import insert

from tierflow.config import Settings
from tierflow.demo.broker import generate_log_dir
from tierflow.demo.topics import TopicSpec
from tierflow.ids import to_kafka_uuid
from tierflow.kafka.checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    write_offset_checkpoint,
)
from tierflow.kafka.log_dir import LogDir
from tierflow.kafka.partition_metadata import PARTITION_METADATA, partition_metadata_bytes
from tierflow.kafka.records import CODEC_NONE
from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import MetadataEvent, Partition, RemoteLogSegment, RemoteSegmentObject
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore
from tierflow.runtime import open_store

NOW_MS = 1_790_000_000_000
STUCK_EVERY = 97
DELETING_EVERY = 89
TEMPLATE = "template"
CHECKPOINTS = (
    REPLICATION_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
)
BATCH = 20_000
HISTORY_MS = 3 * 86_400_000  # well over the stuck threshold, under retention.ms (7 days)


@dataclass(frozen=True)
class TemplateSegment:
    start_offset: int
    end_offset: int
    size_bytes: int
    max_timestamp_ms: int
    leader_epochs: list[tuple[int, int]]


@dataclass(frozen=True)
class ManyPartitions:
    settings: Settings
    store: MetadataStore
    topics: list[str]
    partitions: int  # per topic
    now_ms: int


def topic_name(index: int) -> str:
    return f"topic-{index:03d}"


def build_many_partitions(
    base: Path, *, topics: int, partitions: int, segments: int = 3, now_ms: int = NOW_MS
) -> ManyPartitions:
    """``topics`` x ``partitions`` partitions under ``base``, each ``segments`` rolled segments."""
    settings = Settings.embedded(base)
    log_dir = settings.log_dirs[0]
    template = _template(base / "template-logs", segments, now_ms)
    names = [topic_name(t) for t in range(topics)]
    ids = {name: to_kafka_uuid(uuid.UUID(int=(t + 2) << 64 | 7)) for t, name in enumerate(names)}
    checkpoints = {name: LogDir(template.parent).checkpoint(name) for name in CHECKPOINTS}
    values = {name: found[(TEMPLATE, 0)] for name, found in checkpoints.items()}
    files = [p for p in template.iterdir() if p.name != PARTITION_METADATA]
    for name in names:
        metadata = partition_metadata_bytes(ids[name])
        for number in range(partitions):
            directory = log_dir / f"{name}-{number}"
            directory.mkdir(parents=True)
            for path in files:
                os.link(path, directory / path.name)
            (directory / PARTITION_METADATA).write_bytes(metadata)
    for checkpoint, value in values.items():
        write_offset_checkpoint(
            log_dir / checkpoint,
            {(name, number): value for name in names for number in range(partitions)},
        )
    store = open_store(settings)
    rolled = _template_segments(template, segments)
    for name in names:
        store.register_topic(
            name, ids[name], actor="bench", now_ms=now_ms, remote_storage_enable=True
        )
    _insert_rows(store, [ids[n] for n in names], partitions, rolled, now_ms)
    return ManyPartitions(settings, store, names, partitions, now_ms)


def _template(path: Path, segments: int, now_ms: int) -> Path:
    spec = TopicSpec(name=TEMPLATE, partitions=1, segments=segments, codecs=(CODEC_NONE,))
    generate_log_dir(path, topics=(spec,), seed=3, now_ms=now_ms, segment_bytes=16 * 1024)
    return path / f"{TEMPLATE}-0"


def _template_segments(template: Path, segments: int) -> list[TemplateSegment]:
    log_ = LogDir(template.parent).partition(TEMPLATE, 0)
    found = log_.segments()
    return [
        TemplateSegment(
            seg.base_offset,
            found[i + 1].base_offset - 1,
            seg.size_in_bytes(),
            seg.largest_timestamp(),
            [(e.epoch, e.start_offset) for e in seg.leader_epochs()],
        )
        for i, seg in enumerate(found[:segments])
    ]


def _insert_rows(
    store: MetadataStore,
    topic_ids: list[str],
    partitions: int,
    rolled: list[TemplateSegment],
    now_ms: int,
) -> None:
    rows: dict[type, list[dict]] = {
        Partition: [],
        RemoteLogSegment: [],
        RemoteSegmentObject: [],
        MetadataEvent: [],
    }
    for t, topic_id in enumerate(topic_ids):
        for number in range(partitions):
            copied = number % (len(rolled) + 1)
            highest = rolled[copied - 1].end_offset if copied else -1
            rows[Partition].append(
                {"topic_id": topic_id, "partition": number, "highest_remote_offset": highest}
            )
            # Each partition's copies a second after the previous one's, over the last days.
            since = now_ms - HISTORY_MS + (t * partitions + number) * 1000
            for i, seg in enumerate(rolled[:copied]):
                deleting = i == 0 and number % DELETING_EVERY == 1
                _segment(rows, topic_id, number, f"{t}-{number}-{i}", seg, since + i, deleting)
            if number % STUCK_EVERY == 0 and copied < len(rolled):
                _segment(rows, topic_id, number, f"{t}-{number}-s", rolled[copied], since, None)
            if sum(len(v) for v in rows.values()) > BATCH:
                _flush(store, rows)
    _flush(store, rows)


def _segment(
    rows: dict[type, list[dict]],
    topic_id: str,
    partition: int,
    key: str,
    seg: TemplateSegment,
    since: int,
    deleting: bool | None,
) -> None:
    """One segment row with its events from ``since`` on; ``deleting`` None: a copy that
    never finished."""
    segment_id = to_kafka_uuid(uuid.uuid5(uuid.NAMESPACE_URL, key))
    states = [S.COPY_SEGMENT_STARTED]
    if deleting is not None:
        states.append(S.COPY_SEGMENT_FINISHED)
        rows[RemoteSegmentObject].append(
            {
                "segment_id": segment_id,
                "kind": "log",
                "key": key,
                "size": seg.size_bytes,
                "sha256": "",
            }
        )
    if deleting:
        states.append(S.DELETE_SEGMENT_STARTED)
    rows[RemoteLogSegment].append(
        {
            "segment_id": segment_id,
            "topic_id": topic_id,
            "partition": partition,
            "start_offset": seg.start_offset,
            "end_offset": seg.end_offset,
            "max_timestamp_ms": seg.max_timestamp_ms,
            "leader_epoch": seg.leader_epochs[0][0] if seg.leader_epochs else 0,
            "segment_leader_epochs": json.dumps([list(e) for e in seg.leader_epochs]),
            "segment_size_bytes": seg.size_bytes,
            "state": states[-1].value,
            "tiered_epoch": 1,
            "event_timestamp_ms": since + len(states),
            "owner": "bench",
            "created_ms": since,
        }
    )
    for step, (before, after) in enumerate(zip([None, *states], states, strict=False)):
        rows[MetadataEvent].append(
            {
                "event_timestamp_ms": since + step + 1,
                "entity": EventEntity.SEGMENT.value,
                "topic_id": topic_id,
                "partition": partition,
                "segment_id": segment_id,
                "from_state": before.value if before else None,
                "to_state": after.value,
                "actor": "bench",
            }
        )


def _flush(store: MetadataStore, rows: dict[type, list[dict]]) -> None:
    with store.engine.begin() as connection:
        for model, found in rows.items():
            if found:
                connection.execute(insert(model), found)
            found.clear()
