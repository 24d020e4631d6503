"""The leader replica of every partition: the only replica tierflow reads data from."""

from __future__ import annotations

from dataclasses import dataclass

from tierflow.config import Settings
from tierflow.kafka.log_dir import PartitionLog
from tierflow.runtime import find_partition_log, partition_logs

SINGLE_BROKER = 0


@dataclass(frozen=True)
class LeaderLog:
    """A partition's leader replica: the broker that holds it, and its log."""

    broker: int
    log: PartitionLog


def leader_logs(settings: Settings) -> list[LeaderLog]:
    """Every partition's leader replica, sorted by topic and partition."""
    return [LeaderLog(SINGLE_BROKER, log_) for log_ in partition_logs(settings.log_dirs)]


def leader_log(settings: Settings, topic: str, partition: int) -> LeaderLog:
    """One partition's leader replica; UnknownPartitionError when no broker holds it."""
    return LeaderLog(SINGLE_BROKER, find_partition_log(settings.log_dirs, topic, partition))
