"""Which registered topics has Kafka deleted? The detection half of remote partition removal.

Only decides; marking (``partition_removal.mark_topic_deleted``) is the caller's job. The
candidates are the store's live topics (not retired) whose partitions are not all marked for
delete yet. Topics are judged by *id*: a topic deleted and recreated under the same name is
reported with its old id, which is the one whose remote data must go.

Two sources of evidence:

- **Cluster metadata** (``read_cluster_topics``), authoritative when a bootstrap server is
  configured: a topic is deleted when its name is absent, or present under another id. One
  exception makes it safe against a partial answer (say, a listing filtered by ACLs): a topic
  absent from the cluster but still live under its id in the log dirs is kept until the broker
  removes its directories, which it does soon after a real deletion.
- **The log dirs**, the only source without a bootstrap server. Kafka renames a deleted
  partition's directory to ``<topic>-<partition>.<32 hex>-delete`` before removing it. A topic
  is deleted when no live (or ``-future``, i.e. moving between log dirs) directory with its
  name and id is left, or when a live directory with its name carries another id (recreated).
  Absence alone only counts for topics this broker has held, i.e. the store has partitions of
  them: a broker's log dirs hold only its own replicas, so a topic it never held proves
  nothing. Even so, reassigning every local replica of a topic to other brokers looks the
  same as deleting it; configure the bootstrap server where reassignments happen.

Absence is only trusted when every log dir is there, readable, and looks like a broker's
(partition directories, ``meta.properties`` or an offset checkpoint); otherwise
``LogDirsUnavailableError`` is raised, so an unmounted volume never reads as "all deleted".
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from tierflow.kafka.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from tierflow.kafka.errors import KafkaFormatError
from tierflow.kafka.meta_properties import META_PROPERTIES
from tierflow.kafka.naming import parse_partition_dir
from tierflow.kafka.partition_metadata import PARTITION_METADATA, read_partition_metadata
from tierflow.metadata.store import MetadataStore
from tierflow.metadata.topic_registry import RETIRED_MARK

__all__ = [
    "ALREADY_MARKED",
    "DeletedTopic",
    "DetectionReport",
    "KeptTopic",
    "LogDirsUnavailableError",
    "PartitionDir",
    "candidate_topic_names",
    "find_deleted_topics",
    "scan_log_dirs",
]

Source = Literal["cluster", "log-dirs"]
# The reason of a kept topic whose partitions are all marked but whose name is not retired
# yet (a run stopped between the two); the caller may finish by retiring the name.
ALREADY_MARKED = "already marked for delete (name not retired yet)"
DirKind = Literal["live", "delete", "future", "stray"]

BROKER_FILES = frozenset(
    {
        META_PROPERTIES,
        REPLICATION_OFFSET_CHECKPOINT,
        RECOVERY_POINT_OFFSET_CHECKPOINT,
        LOG_START_OFFSET_CHECKPOINT,
        CLEANER_OFFSET_CHECKPOINT,
    }
)
# Kafka's renamed partition dirs: "<topic>-<partition>.<uuid without dashes><suffix>". For
# -delete and -stray a long topic name is cut short to keep the name within 255 characters.
_RENAMED = re.compile(r"^(?P<tp>.+)\.[0-9a-f]{32}-(?P<kind>delete|future|stray)$")


class LogDirsUnavailableError(RuntimeError):
    """A log dir cannot be trusted to show what exists, so absence from it proves nothing."""

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        super().__init__(f"log dir {path} {reason}; not detecting deleted topics from it")


@dataclass(frozen=True)
class PartitionDir:
    """One partition directory found in a log dir, live or renamed by Kafka."""

    topic: str  # may be cut short in -delete/-stray names of very long topics
    partition: int
    kind: DirKind
    topic_id: str | None  # from partition.metadata; None if absent or unreadable
    path: Path


@dataclass(frozen=True)
class DeletedTopic:
    name: str
    topic_id: str  # the registered (old) id: the one to mark
    reason: str
    source: Source


@dataclass(frozen=True)
class KeptTopic:
    name: str
    topic_id: str
    reason: str


@dataclass
class DetectionReport:
    source: Source  # what decided: the cluster when configured, else the log dirs
    deleted: list[DeletedTopic] = field(default_factory=list)
    kept: list[KeptTopic] = field(default_factory=list)

    def deleted_names(self) -> list[str]:
        return [topic.name for topic in self.deleted]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Candidate:
    name: str
    topic_id: str
    held: bool  # the store has partitions of it: this broker has held the topic


@dataclass(frozen=True)
class _LocalEvidence:
    """What the log dirs say about one registered topic."""

    live: tuple[int, ...] = ()  # live dirs with its id (or no readable id)
    moving: tuple[int, ...] = ()  # -future dirs with its id
    other_ids: tuple[str, ...] = ()  # ids of live dirs with its name but another id
    leaving: tuple[str, ...] = ()  # names of its -delete and -stray dirs

    def summary(self) -> str:
        parts = []
        if self.live:
            parts.append(f"live partitions {list(self.live)}")
        if self.moving:
            parts.append(f"partitions {list(self.moving)} moving between log dirs")
        if self.other_ids:
            parts.append(f"same name under topic id {', '.join(self.other_ids)}")
        if self.leaving:
            parts.append(f"renamed by Kafka for removal: {', '.join(self.leaving)}")
        return "; ".join(parts) or "no partition dirs"


# A diskless topic has no partition directories on any broker: their absence proves nothing.
DISKLESS_NO_LOG_DIRS = "diskless: no log dirs to judge by (only the cluster metadata can tell)"


def find_deleted_topics(
    store: MetadataStore,
    *,
    log_dirs: Sequence[Path | str],
    cluster: Mapping[str, str | None] | None = None,
    diskless_topic_ids: Collection[str] = frozenset(),
) -> DetectionReport:
    """Decide which candidate topics are deleted; reads only, marks nothing.

    ``cluster`` is ``read_cluster_topics``'s answer (name -> id) when a bootstrap server is
    configured, else None. The log dirs are always scanned and must be available.
    ``diskless_topic_ids`` are the diskless topics (the coordinator's, which sits above this
    layer): they have no partition dirs, so only the cluster can judge them.
    """
    found = scan_log_dirs([Path(p) for p in log_dirs])
    candidates, already = _candidates(store)
    report = DetectionReport("log-dirs" if cluster is None else "cluster", kept=already)
    for candidate in candidates:
        local = _local_evidence(candidate, found)
        if cluster is None and candidate.topic_id in diskless_topic_ids:
            verdict = KeptTopic(candidate.name, candidate.topic_id, DISKLESS_NO_LOG_DIRS)
        elif cluster is None:
            verdict = _judge_by_log_dirs(candidate, local)
        else:
            verdict = _judge_by_cluster(candidate, cluster, local)
        if isinstance(verdict, DeletedTopic):
            report.deleted.append(verdict)
        else:
            report.kept.append(verdict)
    report.kept.sort(key=lambda topic: topic.name)
    return report


def candidate_topic_names(store: MetadataStore) -> list[str]:
    """The names worth asking the cluster about (``read_cluster_topics(topics=...)``)."""
    return [candidate.name for candidate in _candidates(store)[0]]


def scan_log_dirs(log_dirs: Iterable[Path]) -> list[PartitionDir]:
    """Every partition dir, live or renamed, in all log dirs; raises if one is unusable."""
    return [found for path in log_dirs for found in _scan_log_dir(path)]


def _scan_log_dir(path: Path) -> list[PartitionDir]:
    if not path.is_dir():
        what = "is not a directory" if path.exists() else "does not exist (is it mounted?)"
        raise LogDirsUnavailableError(path, what)
    try:
        entries = list(os.scandir(path))
    except OSError as exc:
        raise LogDirsUnavailableError(path, f"cannot be read ({exc})") from exc
    found = [d for entry in entries if entry.is_dir() for d in [_partition_dir(entry)] if d]
    if not found and not any(entry.name in BROKER_FILES for entry in entries):
        raise LogDirsUnavailableError(
            path,
            "does not look like a Kafka log dir (no partition dirs, meta.properties "
            "or offset checkpoints)",
        )
    return found


def _partition_dir(entry: os.DirEntry[str]) -> PartitionDir | None:
    """Classify a directory by name, the way Kafka's log manager does on start-up."""
    kind: DirKind = "live"
    parsed = parse_partition_dir(entry.name)
    if parsed is None:
        renamed = _RENAMED.match(entry.name)
        if renamed is None:
            return None
        parsed = parse_partition_dir(renamed["tp"])
        if parsed is None:
            return None
        kind = cast(DirKind, renamed["kind"])
    path = Path(entry.path)
    return PartitionDir(parsed[0], parsed[1], kind, _dir_topic_id(path), path)


def _dir_topic_id(path: Path) -> str | None:
    """The id in partition.metadata; None when missing (pre-2.8) or corrupt.

    A file that exists but cannot be read makes the whole log dir untrustworthy.
    """
    metadata = path / PARTITION_METADATA
    try:
        return read_partition_metadata(metadata)
    except KafkaFormatError:
        return None
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise LogDirsUnavailableError(path.parent, f"has an unreadable {metadata} ({exc})") from exc


def _candidates(store: MetadataStore) -> tuple[list[_Candidate], list[KeptTopic]]:
    """Live topics not yet fully marked; and those already marked, as kept."""
    held: dict[str, list[int]] = {}
    for row in store.partitions():
        held.setdefault(row.topic_id, []).append(row.partition)
    marked = {(d.topic_id, d.partition) for d in store.partition_deletes()}
    candidates, already = [], []
    for topic in store.topics():
        if RETIRED_MARK in topic.name:
            continue  # a deleted topic whose name was freed; its removal is under way
        if not topic.copied_by_tierflow:
            continue  # handed over: the brokers delete its remote partitions themselves
        partitions = held.get(topic.topic_id, [])
        if partitions and all((topic.topic_id, p) in marked for p in partitions):
            already.append(KeptTopic(topic.name, topic.topic_id, ALREADY_MARKED))
        else:
            candidates.append(_Candidate(topic.name, topic.topic_id, bool(partitions)))
    return candidates, already


def _local_evidence(candidate: _Candidate, found: list[PartitionDir]) -> _LocalEvidence:
    live: set[int] = set()
    moving: set[int] = set()
    other_ids: set[str] = set()
    leaving: list[str] = []
    for d in found:
        if d.kind in ("delete", "stray"):
            # By id when known: the name may be cut short, or belong to another incarnation.
            if d.topic_id == candidate.topic_id or (
                d.topic_id is None and d.topic == candidate.name
            ):
                leaving.append(d.path.name)
        elif d.topic != candidate.name:
            continue
        elif d.topic_id is not None and d.topic_id != candidate.topic_id:
            other_ids.add(d.topic_id)
        elif d.kind == "live":
            live.add(d.partition)
        else:
            moving.add(d.partition)
    return _LocalEvidence(
        tuple(sorted(live)), tuple(sorted(moving)), tuple(sorted(other_ids)), tuple(sorted(leaving))
    )


def _judge_by_log_dirs(candidate: _Candidate, local: _LocalEvidence) -> DeletedTopic | KeptTopic:
    name, topic_id = candidate.name, candidate.topic_id
    evidence = local.summary()
    if local.live or local.moving:
        return KeptTopic(name, topic_id, f"present in the log dirs ({evidence})")
    if local.other_ids:
        reason = f"recreated under another id: log dirs hold {evidence}"
        return DeletedTopic(name, topic_id, reason, "log-dirs")
    if not candidate.held:
        reason = "never held by this broker (no partitions in the store); absence proves nothing"
        return KeptTopic(name, topic_id, reason)
    return DeletedTopic(name, topic_id, f"gone from the log dirs ({evidence})", "log-dirs")


def _judge_by_cluster(
    candidate: _Candidate, cluster: Mapping[str, str | None], local: _LocalEvidence
) -> DeletedTopic | KeptTopic:
    name, topic_id = candidate.name, candidate.topic_id
    evidence = f"log dirs: {local.summary()}"
    if name not in cluster:
        if local.live or local.moving:
            reason = (
                f"absent from the cluster metadata but still live in the log dirs ({evidence});"
                " waiting for the broker to remove it (or mark it: tierflow delete-topic)"
            )
            return KeptTopic(name, topic_id, reason)
        return DeletedTopic(
            name, topic_id, f"absent from the cluster metadata; {evidence}", "cluster"
        )
    current = cluster[name]
    if current is not None and current != topic_id:
        reason = f"recreated: the cluster has it under topic id {current}; {evidence}"
        return DeletedTopic(name, topic_id, reason, "cluster")
    same = "with the same id" if current else "(the broker sends no topic ids)"
    return KeptTopic(name, topic_id, f"in the cluster metadata {same}; {evidence}")
