"""A tiered "orders" (two partitions) plus "payments", and views of what is left remotely."""

from __future__ import annotations

from pathlib import Path

from tests.support.tiered import NOW_MS, Tiered, build_tiered
from tierflow.lifecycle.copy.steps import copy_partition
from tierflow.metadata.states import RemoteLogSegmentState
from tierflow.storage.keys import normalize_prefix
from tierflow.storage.object_store import ObjectStore

OWNER = "test:copy"


def tiered_with_data(base: Path, layout: str = "plain") -> Tiered:
    t = build_tiered(base, layout=layout)
    for log_ in t.logs():
        copy_partition(log_, t.store, t.rsm, owner=OWNER, clock=lambda: NOW_MS)
    return t


def objects(t: Tiered) -> ObjectStore:
    return t.rsm.objects  # type: ignore[attr-defined]


def topic_keys(t: Tiered, name: str, topic_id: str) -> list[str]:
    """Every object under any partition prefix of that topic id."""
    top = f"{normalize_prefix(t.settings.storage.prefix)}{name}-{topic_id}/"
    return sorted(objects(t).list(top))


def topic_dirs(t: Tiered, name: str, topic_id: str) -> list[Path]:
    return list(t.bucket().glob(f"**/{name}-{topic_id}"))


def live_segments(t: Tiered, topic_id: str, partitions: range) -> list[str]:
    return [
        row.segment_id
        for p in partitions
        for row in t.store.segments(topic_id, p)
        if row.state != RemoteLogSegmentState.DELETE_SEGMENT_FINISHED
    ]
