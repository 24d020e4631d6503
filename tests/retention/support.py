"""Shared helpers for the retention tests: tiered data, configs, and a failing bucket.

A plain module (not a conftest) so the crash worker subprocess can import it too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tests.support.tiered import NOW_MS, Tiered
from tierflow.ids import new_kafka_uuid
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata import SegmentTransition, StartedSegment
from tierflow.metadata.models import RemoteLogSegment
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.rsm import ObjectInfo
from tierflow.storage.object_store import ObjectStore

HOUR_MS = 3_600_000
ACTOR = "airflow:retention"


def copy_all(t: Tiered, *, now_ms: int = NOW_MS) -> None:
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner="copy", clock=lambda: now_ms)


def configure(t: Tiered, topic: str, **configs: Any) -> None:
    t.store.register_topic(
        topic, t.store.topic(topic).topic_id, actor="test", now_ms=NOW_MS, **configs
    )


def rows(t: Tiered, topic: str, partition: int, *states: S) -> list[RemoteLogSegment]:
    topic_id = t.store.topic(topic).topic_id
    return t.store.segments(topic_id, partition, states=list(states) or None)


def spans(segments: Iterable[RemoteLogSegment]) -> list[tuple[int, int]]:
    return [(r.start_offset, r.end_offset) for r in segments]


def objects_of(t: Tiered, segment_id: str) -> list[Path]:
    return [t.bucket() / o.key for o in t.store.segment_objects(segment_id)]


def add_remote_segment(
    t: Tiered,
    topic: str,
    partition: int,
    start: int,
    end: int,
    epochs: list[tuple[int, int]],
    *,
    max_timestamp_ms: int = NOW_MS - 1000,
    size: int = 1000,
    finished: bool = True,
    now_ms: int = NOW_MS,
    owner: str = "copy",
) -> str:
    """A metadata row with no objects behind it (deleting missing objects is a success)."""
    segment_id = new_kafka_uuid()
    t.store.add_segment(
        StartedSegment(
            segment_id=segment_id,
            topic_id=t.store.topic(topic).topic_id,
            partition=partition,
            start_offset=start,
            end_offset=end,
            max_timestamp_ms=max_timestamp_ms,
            segment_leader_epochs=epochs,
            segment_size_bytes=size,
            txn_index_empty=True,
        ),
        actor=owner,
        now_ms=now_ms,
    )
    if finished:
        t.store.transition_segment(
            SegmentTransition(segment_id, S.COPY_SEGMENT_FINISHED, objects=[]),
            actor=owner,
            now_ms=now_ms,
        )
    return segment_id


class FailingDeletes:
    """An ObjectStore whose deletes fail for chosen keys: a real storage fault, injected."""

    def __init__(self, inner: ObjectStore, fail_if: str) -> None:
        self.inner = inner
        self.fail_if = fail_if  # a substring of the keys that fail
        self.failures = 0

    def delete(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        for key in keys:
            if self.fail_if and self.fail_if in key:
                self.failures += 1
                raise OSError(f"injected delete failure for {key}")
        self.inner.delete(keys)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def list(self, prefix: str = "") -> Iterator[str]:
        return self.inner.list(prefix)

    def put_file(self, key: str, source: Path) -> ObjectInfo:
        return self.inner.put_file(key, source)
