"""Leaders as Kafka records them: the cluster's Metadata API, else the KRaft metadata log.

Either one is the controller's word on who leads, at which leader epoch, with which replicas
and ISR. A partition neither knows falls through to inference from the log dirs
(``tierflow.cluster.inference``). A cluster that cannot be asked raises: guessing instead could
read a stale replica as the leader.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tierflow.config import Settings
from tierflow.kafka.naming import METADATA_PARTITION_DIR

PartitionKey = tuple[str, int]
CLUSTER = "cluster"
KRAFT = "kraft"
INFERRED = "inferred"
LAST_LEADER = "last-leader"  # a stopped cluster's partition, read from its last leader
NO_LEADER = -1  # Kafka's LeaderConstants.NO_LEADER


@dataclass(frozen=True)
class Assignment:
    """One partition's state as recorded by Kafka; ``leader`` is None when it has none.

    ``stopped``: the KRaft metadata, read offline, gives the partition no leader and none of
    its replicas is on a broker the controller could elect (every one fenced, in controlled
    shutdown or unregistered), as a cleanly stopped cluster leaves it. ``elr`` and
    ``last_known_elr`` are KIP-966's (Kafka 4), empty without them.
    """

    leader: int | None
    leader_epoch: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...] | None
    source: str
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    stopped: bool = False


def known_assignments(
    settings: Settings, log_dirs: Sequence[Path], keys: Collection[PartitionKey]
) -> dict[PartitionKey, Assignment]:
    """What the cluster (when TIERFLOW_KAFKA_BOOTSTRAP is set), then the KRaft metadata log
    in any of ``log_dirs``, record for ``keys``; partitions neither knows are left out."""
    keys = set(keys)
    found: dict[PartitionKey, Assignment] = {}
    if settings.cluster.bootstrap_servers and keys:
        # Only a configured cluster loads kafka-python's client: status on log dirs needs none.
        from tierflow.kafka.cluster_metadata import read_cluster_partitions

        topics = {topic for topic, _partition in keys}
        for key, p in read_cluster_partitions(settings.cluster.bootstrap_servers, topics).items():
            if key in keys:
                leader = None if p.leader == NO_LEADER else p.leader
                found[key] = Assignment(leader, p.leader_epoch, p.replicas, p.isr, CLUSTER)
    missing = keys - found.keys()
    if missing:
        found.update(_kraft_assignments(log_dirs, missing))
    return found


def _kraft_assignments(
    log_dirs: Sequence[Path], keys: Collection[PartitionKey]
) -> dict[PartitionKey, Assignment]:
    """From ``__cluster_metadata-0`` in a log dir, replayed by tierflow.kafka.metadata_log."""
    image = _metadata_image(log_dirs)
    if image is None:
        return {}
    found = {}
    for key in keys:
        p = image.partitions.get(key)
        if p is not None:
            leader = None if p.leader < 0 else p.leader
            stopped = leader is None and not any(image.broker_active(b) for b in p.replicas)
            found[key] = Assignment(
                leader,
                p.leader_epoch,
                tuple(p.replicas),
                tuple(p.isr),
                KRAFT,
                elr=tuple(p.elr),
                last_known_elr=tuple(p.last_known_elr),
                stopped=stopped,
            )
    return found


# The last image replayed, by the metadata log files it came from: a task that looks up one
# partition at a time must not replay the whole metadata log for each.
_replayed: dict[tuple[object, ...], Any] = {}


def _metadata_image(log_dirs: Sequence[Path]) -> Any:
    """The replayed KRaft image (None without one), again only when the log's files changed."""
    key = _files_of([Path(d) / METADATA_PARTITION_DIR for d in log_dirs])
    if not key:
        return None
    if key not in _replayed:
        # Loaded only when there is a metadata log: it brings in kafka-python, whose package
        # imports its clients, a fifth of `tierflow status`'s start-up on log dirs without one.
        from tierflow.kafka.metadata_log import find_metadata_image

        image = find_metadata_image(list(log_dirs))
        _replayed.clear()
        _replayed[key] = image
    return _replayed[key]


def _files_of(dirs: Sequence[Path]) -> tuple[object, ...]:
    """Name, size and modification time of every file in those of ``dirs`` that exist."""
    found: list[object] = []
    for path in dirs:
        if path.is_dir():
            with os.scandir(path) as entries:
                stats = sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in entries)
            found.append((str(path), tuple(stats)))
    return tuple(found)
