"""Which brokers hold a replica of which partition: a partition directory in their log dirs.

Within one broker a partition lives in exactly one of its log dirs (JBOD); the same directory
in two of one broker's dirs is an error, as Kafka refuses to start with it. Across brokers the
same directory is simply another replica.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tierflow.cluster.brokers import Broker, SnapshotLogDir
from tierflow.kafka.log_dir import METADATA_TOPIC, PartitionLog
from tierflow.kafka.naming import parse_partition_dir

PartitionKey = tuple[str, int]


class DuplicateReplicaError(ValueError):
    """One broker has the same partition in two of its log dirs."""


@dataclass(frozen=True)
class Replica:
    broker: int
    log: PartitionLog


def open_log_dirs(brokers: Sequence[Broker]) -> dict[int, list[SnapshotLogDir]]:
    """Each broker's log dirs, opened once so their checkpoints are read once."""
    return {b.broker_id: [SnapshotLogDir(path) for path in b.log_dirs] for b in brokers}


def all_replicas(log_dirs: dict[int, list[SnapshotLogDir]]) -> dict[PartitionKey, list[Replica]]:
    """Every partition's replicas, by broker id; one directory listing per log dir."""
    found: dict[PartitionKey, list[Replica]] = {}
    for broker_id in sorted(log_dirs):
        seen: dict[PartitionKey, Path] = {}
        for log_dir in log_dirs[broker_id]:
            for key, path in _partition_dirs(log_dir.path):
                if key in seen:
                    raise _duplicate(broker_id, key, seen[key], path)
                seen[key] = path
                log_ = PartitionLog(key[0], key[1], path, log_dir)
                found.setdefault(key, []).append(Replica(broker_id, log_))
    return found


def replicas_of(
    log_dirs: dict[int, list[SnapshotLogDir]], topic: str, partition: int
) -> list[Replica]:
    """One partition's replicas, looked up by directory name: no listing of the log dirs."""
    name = f"{topic}-{partition}"
    replicas = []
    for broker_id in sorted(log_dirs):
        held = [d for d in log_dirs[broker_id] if (d.path / name).is_dir()]
        if len(held) > 1:
            first, second = held[0].path / name, held[1].path / name
            raise _duplicate(broker_id, (topic, partition), first, second)
        if held:
            log_ = PartitionLog(topic, partition, held[0].path / name, held[0])
            replicas.append(Replica(broker_id, log_))
    return replicas


def _partition_dirs(path: Path) -> list[tuple[PartitionKey, Path]]:
    """Live partition directories of one log dir (scandir: no stat per entry on Linux)."""
    found = []
    with os.scandir(path) as entries:
        for entry in entries:
            parsed = parse_partition_dir(entry.name)
            # The KRaft metadata log is the Raft client's, not a replica LogManager loads.
            if parsed is not None and parsed[0] != METADATA_TOPIC and entry.is_dir():
                found.append((parsed, Path(entry.path)))
    return found


def _duplicate(broker_id: int, key: PartitionKey, first: Path, second: Path) -> ValueError:
    return DuplicateReplicaError(
        f"partition {key[0]}-{key[1]} is in two log dirs of broker {broker_id}: "
        f"{first} and {second}"
    )
