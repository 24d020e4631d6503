"""Open the configured store, storage and log directories: one place for every entry point."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tierflow.config import Settings
from tierflow.kafka.log_dir import LogDir, PartitionLog
from tierflow.metadata.store import MetadataStore
from tierflow.storage.factory import open_remote_storage, settings_object_store
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.remote_storage_manager import RemoteStorageManager


class UnknownPartitionError(LookupError):
    pass


def open_store(settings: Settings, *, migrate: bool = True) -> MetadataStore:
    """The metadata store; readers elsewhere (a Spark driver) pass migrate=False."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return MetadataStore(settings.db_url, migrate=migrate)


def open_storage(settings: Settings) -> RemoteStorageManager:
    return open_remote_storage(settings)


def open_objects(settings: Settings) -> ObjectStore:
    """The bucket itself, for work that lists keys rather than reading segments."""
    return settings_object_store(settings)


def partition_logs(log_dirs: Sequence[Path]) -> list[PartitionLog]:
    """Every partition in the broker's log directories (JBOD: several), sorted."""
    found: dict[tuple[str, int], PartitionLog] = {}
    for path in log_dirs:
        for log_ in LogDir(path).partitions():
            key = (log_.topic, log_.partition)
            if key in found:
                raise ValueError(
                    f"partition {log_.topic}-{log_.partition} is in two log dirs: "
                    f"{found[key].path} and {log_.path}"
                )
            found[key] = log_
    return [found[k] for k in sorted(found)]


def find_partition_log(log_dirs: Sequence[Path], topic: str, partition: int) -> PartitionLog:
    for log_ in partition_logs(log_dirs):
        if (log_.topic, log_.partition) == (topic, partition):
            return log_
    dirs = ", ".join(str(p) for p in log_dirs)
    raise UnknownPartitionError(f"no directory {topic}-{partition} in the log dirs ({dirs})")
