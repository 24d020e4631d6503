"""The page's figures recomputed the plain way, from the store's rows and the files on disk.

Shared by the unit tests and the browser test, so both check the page against the same
independent arithmetic rather than against the code that produced it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tierflow.metadata.states import RemoteLogSegmentState as S
from tierflow.metadata.store import MetadataStore

SIZE_STATES = {S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED}
LIVE_STATES = {S.COPY_SEGMENT_STARTED, S.COPY_SEGMENT_FINISHED, S.DELETE_SEGMENT_STARTED}


@dataclass
class Expected:
    local_bytes: int = 0
    local_segments: int = 0
    remote_log_size_bytes: int = 0
    remote_log_metadata_count: int = 0
    remote_copy_lag_bytes: int = 0
    remote_copy_lag_segments: int = 0
    remote_delete_lag_bytes: int = 0
    remote_delete_lag_segments: int = 0
    states: Counter = field(default_factory=Counter)  # segments per state
    highest_remote_offset: int = -1
    log_start_offset: int = 0
    local_log_start_offset: int = 0


def local_files(log_dir: Path) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """(base offset, .log size) of every segment file, from the directory listing itself."""
    found: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for directory in sorted(Path(log_dir).iterdir()):
        topic, _, partition = directory.name.rpartition("-")
        if not directory.is_dir() or not topic or not partition.isdigit():
            continue
        logs = sorted(directory.glob("*.log"))
        found[(topic, int(partition))] = [(int(p.stem), p.stat().st_size) for p in logs]
    return found


def expected_partitions(store: MetadataStore, log_dir: Path) -> dict[tuple[str, int], Expected]:
    """Every partition of every registered topic that is on disk."""
    found = {}
    for (name, number), files in local_files(log_dir).items():
        try:
            topic = store.topic(name)
        except LookupError:
            continue
        row = store.partition(topic.topic_id, number)
        rows = store.segments(topic.topic_id, number)
        e = Expected(
            local_bytes=sum(size for _, size in files),
            local_segments=len(files),
            states=Counter(r.state for r in rows),
        )
        if row is not None:
            e.highest_remote_offset = row.highest_remote_offset
            e.log_start_offset = row.log_start_offset
            e.local_log_start_offset = row.local_log_start_offset
        e.remote_log_size_bytes = sum(r.segment_size_bytes for r in rows if r.state in SIZE_STATES)
        e.remote_log_metadata_count = sum(1 for r in rows if r.state in LIVE_STATES)
        deleting = [r for r in rows if r.state == S.DELETE_SEGMENT_STARTED]
        e.remote_delete_lag_bytes = sum(r.segment_size_bytes for r in deleting)
        e.remote_delete_lag_segments = len(deleting)
        only_local = [size for base, size in files if base > e.highest_remote_offset]
        e.remote_copy_lag_bytes = max(sum(only_local) - files[-1][1], 0)
        e.remote_copy_lag_segments = max(len(only_local) - 1, 0)
        found[(name, number)] = e
    return found


def expected_topics(store: MetadataStore, log_dir: Path) -> dict[str, Expected]:
    """The partitions summed per topic (segment states include the tombstones)."""
    found: dict[str, Expected] = {}
    for (name, _), p in expected_partitions(store, log_dir).items():
        t = found.setdefault(name, Expected())
        for attribute in (
            "local_bytes",
            "local_segments",
            "remote_log_size_bytes",
            "remote_log_metadata_count",
            "remote_copy_lag_bytes",
            "remote_copy_lag_segments",
            "remote_delete_lag_bytes",
            "remote_delete_lag_segments",
        ):
            setattr(t, attribute, getattr(t, attribute) + getattr(p, attribute))
        t.states.update(p.states)
    return found
