"""Damage to a tiered segment's objects in the bucket, read back through a fresh storage manager.

Shared by the broken-remote corpus tests and the export CLI tests.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.support.tiered import Tiered
from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.rsm import RemoteSegment
from tierflow.runtime import open_storage
from tierflow.segment_refs import remote_segment

TOPIC, PARTITION = "orders", 0


def first_segment(t: Tiered) -> RemoteSegment:
    topic = t.store.topic(TOPIC)
    rows = t.store.segments(topic.topic_id, PARTITION, states=[S.COPY_SEGMENT_FINISHED])
    return remote_segment(topic, rows[0])


def object_of(t: Tiered, segment: RemoteSegment, suffix: str) -> Path:
    key = next(k for k in t.rsm.object_keys(segment) if k.endswith(suffix))
    return t.bucket() / key


def key_of(t: Tiered, path: Path) -> str:
    return path.relative_to(t.bucket()).as_posix()


def fresh_reader(t: Tiered) -> Tiered:
    """A reader through a fresh storage manager, as in another process: the one that copied
    keeps the manifests it wrote in memory and would not look at the damaged objects."""
    return dataclasses.replace(t, rsm=open_storage(t.settings))


def flip_log_chunk(t: Tiered) -> tuple[Tiered, dict[str, object]]:
    path = object_of(t, first_segment(t), ".log")
    data = bytearray(path.read_bytes())
    data[40] ^= 0x04  # inside chunk 0, past its IV
    path.write_bytes(bytes(data))
    return fresh_reader(t), {"key": key_of(t, path)}
