"""What a Spark executor runs for the rewrite job.

It lives in the package, not in the Spark application, because executors unpickle task
functions by importing their module: functions of the submitted script's ``__main__`` cannot be
found there.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache

from tierflow.config import Settings
from tierflow.lifecycle.rewrite import RewriteJob, rewrite_segment
from tierflow.storage.remote_storage_manager import RemoteStorageManager


@lru_cache(maxsize=4)
def executor_storage(settings: Settings) -> RemoteStorageManager:
    """One storage manager per Python worker: Spark reuses workers across tasks, and opening
    storage (loading the key ring) for every segment costs tens of milliseconds."""
    from tierflow.runtime import open_storage

    return open_storage(settings)


def rewrite_partition(settings: Settings, rows: Iterable[dict]) -> Iterator[dict]:
    """The segments of one Spark partition (one segment each), rewritten and reported."""
    rsm = executor_storage(settings)
    for row in rows:
        yield rewrite_segment(RewriteJob(**row), rsm).as_dict()
