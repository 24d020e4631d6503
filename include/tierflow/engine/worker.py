"""What a worker opens once and keeps: the storage manager and the bucket, per settings.

Spark reuses its Python workers across tasks and the engine's processes run many jobs each;
opening storage (loading the key ring, building a cloud client) for every segment would cost
tens of milliseconds. Nothing here imports Airflow: a cloud bucket is reached through the
client spec the caller hands over (tierflow.storage.handover).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import lru_cache, partial

from tierflow.config import Settings
from tierflow.engine.processes import default_workers
from tierflow.engine.spawned import early_pool
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.handover import BucketClient, connection_client
from tierflow.storage.object_store import ObjectStore
from tierflow.storage.urls import is_local_url


@dataclass(frozen=True)
class Worker:
    """The settings and bucket connection a job runs with; its storage is opened once per
    process and shared by every job that process runs."""

    settings: Settings
    bucket_client: BucketClient | None = None

    @classmethod
    def here(cls, settings: Settings) -> Worker:
        """For jobs started here (the CLI, an Airflow task): a cloud bucket's connection is
        resolved now, in this process, and goes to the pool's processes as an argument."""
        return cls(settings, connection_client(settings))

    @property
    def rsm(self) -> RemoteStorageManager:
        return executor_storage(self.settings, self.bucket_client)

    @property
    def objects(self) -> ObjectStore:
        return executor_objects(self.settings, self.bucket_client)


@lru_cache(maxsize=4)
def executor_storage(
    settings: Settings, bucket_client: BucketClient | None = None
) -> RemoteStorageManager:
    """The storage manager, one per Python process."""
    from tierflow.storage.factory import open_remote_storage

    return open_remote_storage(settings, bucket_client=bucket_client)


@lru_cache(maxsize=4)
def executor_objects(settings: Settings, bucket_client: BucketClient | None = None) -> ObjectStore:
    """The bucket as plain objects (the WAL, the export's Parquet files), one per process."""
    from tierflow.storage.factory import settings_object_store

    return settings_object_store(settings, bucket_client=bucket_client)


def early_workers(
    settings: Settings, workers: int | None, modules: tuple[str, ...]
) -> AbstractContextManager[None]:
    """The run's processes spawned now (spawned.early_pool): ``workers``, else
    TIERFLOW_WORKER_PROCESSES, else one per core; each imports ``modules`` and, for a local
    bucket, opens the storage its jobs will use (``Worker(settings)``). A cloud bucket's jobs
    come with the connection the caller resolves later (storage.handover), and opening one
    without it would be another storage."""
    local = is_local_url(settings.remote_storage)
    warm = partial(executor_storage, settings) if local else None
    return early_pool(processes_for(settings, workers) or default_workers(), modules, warm)


def processes_for(settings: Settings, workers: int | None) -> int | None:
    """How many processes a batch run here gets: ``workers`` (a command's --workers), else
    TIERFLOW_WORKER_PROCESSES; None leaves it to the engine (one per core from 32 MiB)."""
    return workers or settings.spark.worker_processes or None
