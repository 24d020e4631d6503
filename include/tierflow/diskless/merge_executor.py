"""What a Spark executor runs for the merge job (spark_apps/merge_wal_segments.py).

In the package, not in the Spark application, because executors unpickle task functions by
importing their module. Nothing here imports Airflow: an S3 bucket is reached with the boto3
client spec the driver ships in the task closure (see tierflow.storage.handover).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache

from tierflow.config import Settings
from tierflow.diskless.merge_job import MergeJob, run_merge_job
from tierflow.lifecycle.copy.rewrite_executor import executor_storage
from tierflow.storage.factory import settings_object_store
from tierflow.storage.handover import BucketClient
from tierflow.storage.object_store import ObjectStore


@lru_cache(maxsize=4)
def executor_objects(settings: Settings, bucket_client: BucketClient | None = None) -> ObjectStore:
    """The bucket the WAL objects are read from, one per Python worker."""
    return settings_object_store(settings, bucket_client=bucket_client)


def merge_partitions(
    settings: Settings, rows: Iterable[dict], bucket_client: BucketClient | None = None
) -> Iterator[dict]:
    """The partitions of one Spark partition (one each): their segments built, uploaded and
    reported, one result per segment."""
    rsm = executor_storage(settings, bucket_client)
    objects = executor_objects(settings, bucket_client)
    for row in rows:
        for result in run_merge_job(MergeJob.from_dict(row), objects, rsm):
            yield result.as_dict()
