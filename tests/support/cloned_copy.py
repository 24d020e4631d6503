"""The store and bucket a first copy of many identical topics leaves, from one topic's real copy.

A first copy of 10,000 partitions takes about four minutes on two cores (24 ms per partition
of two small segments, measured in process over 1,000), longer than a benchmark of what comes
*after* it should. When every topic's partitions hold the same segments
(``tests.support.cluster_logs`` links them), copying one topic for real and cloning its result
is exact: per cloned segment a fresh segment id, the same row, state and events under the
other topic's id, and the same objects: the ``.log`` chunks and ``.indexes`` hard-linked (their
bytes do not name the partition), the ``.rsm-manifest`` rewritten with the partition's remote
log segment id (as compact JSON, as the copy writes it) and its size and sha256 recorded.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import insert, select

from tierflow.config import Settings
from tierflow.ids import new_kafka_uuid
from tierflow.metadata.events import EventEntity
from tierflow.metadata.models import (
    MetadataEvent,
    Partition,
    RemoteLogSegment,
    RemoteSegmentObject,
    SegmentObjectKind,
)
from tierflow.metadata.store import MetadataStore
from tierflow.storage.factory import is_s3_url
from tierflow.tasks.segment_copy import COPY
from tierflow.tasks.shards import cut_shards
from tierflow.tasks.staged import (
    finalize_shard,
    plan_batch,
    prepare_shard,
    run_in_worker,
    summarize,
)

BATCH = 20_000
LEASE_TTL_S = 900


def copy_in_process(settings: Settings, topics: set[str] | None = None) -> dict:
    """The segment_copy DAG's steps in this process (plan, prepare per shard, one rewrite in
    the worker, finalize per shard, summarize), for the partitions of ``topics`` (None: all)."""
    op = COPY
    params = {"lease_ttl_s": LEASE_TTL_S}
    targets = [t for t in op.targets(settings, params) if topics is None or t["topic"] in topics]
    shards = cut_shards(targets, max_shards=settings.max_shards)
    prepares = [
        prepare_shard(op, shard, params=params, run_key="in-process", settings=settings)
        for shard in shards
    ]
    batch = plan_batch(op, prepares, run_key="in-process", settings=settings)
    run_in_worker(op, batch, settings)
    finalizes = [finalize_shard(op, outcome, batch, settings) for outcome in prepares]
    return summarize(op, shards, prepares, finalizes)


def clone_copies(
    store: MetadataStore, settings: Settings, *, source: str, targets: Sequence[str]
) -> int:
    """Give each partition of the ``targets`` topics the remote segments that the same
    partition of ``source`` has; returns the segments cloned. Targets must have none yet."""
    if is_s3_url(settings.remote_storage):
        raise ValueError("clone_copies links objects in a local bucket, not in an s3:// one")
    bucket = Path(settings.remote_storage)
    ids = {t.name: t.topic_id for t in store.topics()}
    rows = _source_rows(store, ids[source])
    out: dict[type, list[dict]] = {
        Partition: [],
        RemoteLogSegment: [],
        RemoteSegmentObject: [],
        MetadataEvent: [],
    }
    cloned = 0
    for name in targets:
        clone = _Clone(source, ids[source], name, ids[name], bucket)
        out[Partition] += [{**row, "topic_id": clone.topic_id} for row in rows[Partition]]
        for segment in rows[RemoteLogSegment]:
            cloned += 1
            new_id = clone.segment_id(segment["segment_id"])
            out[RemoteLogSegment].append(clone.segment(segment, new_id))
        out[RemoteSegmentObject] += [clone.object(row) for row in rows[RemoteSegmentObject]]
        out[MetadataEvent] += [clone.event(row) for row in rows[MetadataEvent]]
        if sum(len(found) for found in out.values()) > BATCH:
            _flush(store, out)
    _flush(store, out)
    return cloned


class _Clone:
    """One target topic: new segment ids, and its objects and rows as the copy writes them."""

    def __init__(self, source: str, source_id: str, name: str, topic_id: str, bucket: Path):
        self.source_prefix = f"{source}-{source_id}/"
        self.prefix = f"{name}-{topic_id}/"
        self.source, self.name, self.topic_id, self.bucket = source, name, topic_id, bucket
        self.ids: dict[str, str] = {}

    def segment_id(self, source_id: str) -> str:
        return self.ids.setdefault(source_id, new_kafka_uuid())

    def segment(self, row: dict, new_id: str) -> dict:
        return {
            **row,
            "segment_id": new_id,
            "topic_id": self.topic_id,
            "owner": self._actor(row["owner"]),
        }

    def object(self, row: dict) -> dict:
        new_id = self.ids[row["segment_id"]]
        key = row["key"].replace(self.source_prefix, self.prefix, 1)
        key = key.replace(row["segment_id"], new_id)
        target = self.bucket / key
        target.parent.mkdir(parents=True, exist_ok=True)
        if row["kind"] != SegmentObjectKind.RSM_MANIFEST.value:
            os.link(self.bucket / row["key"], target)
            return {**row, "segment_id": new_id, "key": key}
        data = self._manifest(self.bucket / row["key"], new_id, int(key.split("/")[-2]))
        target.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        return {**row, "segment_id": new_id, "key": key, "size": len(data), "sha256": digest}

    def event(self, row: dict) -> dict:
        segment_id = row["segment_id"]
        return {
            **row,
            "topic_id": self.topic_id,
            "segment_id": self.ids.get(segment_id, segment_id),
            "actor": self._actor(row["actor"]),
        }

    def _manifest(self, path: Path, new_id: str, partition: int) -> bytes:
        manifest = json.loads(path.read_bytes())
        manifest["remoteLogSegmentMetadata"]["remoteLogSegmentId"] = {
            "topicIdPartition": {
                "topicId": self.topic_id,
                "topicPartition": {"topic": self.name, "partition": partition},
            },
            "id": new_id,
        }
        return json.dumps(manifest, separators=(",", ":")).encode()

    def _actor(self, actor: str | None) -> str | None:
        """Lease owners and actors name the partition (``...:topic-partition``)."""
        return actor.replace(f":{self.source}-", f":{self.name}-") if actor else actor


def _source_rows(store: MetadataStore, topic_id: str) -> dict[type, list[dict]]:
    """The source topic's partitions, segments, their objects and their events, as dicts."""
    found: dict[type, list[dict]] = {}
    with store.engine.connect() as connection:
        for model in (Partition, RemoteLogSegment, MetadataEvent):
            table = model.__table__
            query = select(table).where(table.c.topic_id == topic_id)
            if model is MetadataEvent:
                query = query.where(table.c.entity != EventEntity.TOPIC.value)
            found[model] = [dict(r._mapping) for r in connection.execute(query)]
        segment_ids = [row["segment_id"] for row in found[RemoteLogSegment]]
        objects = RemoteSegmentObject.__table__
        query = select(objects).where(objects.c.segment_id.in_(segment_ids))
        found[RemoteSegmentObject] = [dict(r._mapping) for r in connection.execute(query)]
    for row in found[MetadataEvent]:
        row.pop("id")  # the store numbers its events
    return found


def _flush(store: MetadataStore, rows: dict[type, list[dict]]) -> None:
    with store.engine.begin() as connection:
        for model, found in rows.items():
            if found:
                connection.execute(insert(model), found)
            found.clear()
