"""What a Spark executor runs for the rewrite job.

It lives in the package, not in the Spark application, because executors unpickle task
functions by importing their module: functions of the submitted script's ``__main__`` cannot be
found there. Nothing here imports Airflow: an S3 bucket is reached with the plain boto3 client
spec the driver ships in the task closure (see tierflow.storage.handover).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache

from tierflow.config import Settings
from tierflow.lifecycle.copy.rewrite import RewriteJob, rewrite_segment
from tierflow.rsm import RemoteStorageManager
from tierflow.storage.handover import BucketClient


@lru_cache(maxsize=4)
def executor_storage(
    settings: Settings, bucket_client: BucketClient | None = None
) -> RemoteStorageManager:
    """One storage manager per Python worker: Spark reuses workers across tasks, and opening
    storage (loading the key ring, building an S3 client) for every segment costs tens of
    milliseconds."""
    from tierflow.storage.factory import open_remote_storage

    return open_remote_storage(settings, bucket_client=bucket_client)


def rewrite_partition(
    settings: Settings, rows: Iterable[dict], bucket_client: BucketClient | None = None
) -> Iterator[dict]:
    """The segments of one Spark partition (one segment each), rewritten and reported."""
    rsm = executor_storage(settings, bucket_client)
    for row in rows:
        yield rewrite_segment(RewriteJob(**row), rsm).as_dict()
