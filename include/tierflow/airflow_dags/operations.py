"""The staged and batch operations as the DAG files hand them to their wiring (staged_pipeline,
spark_or_worker): each a function that imports its task bodies only when a task runs it, so
parsing a DAG file imports none of them. The DAG file passes the function itself; nothing looks
an operation up by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tierflow.tasks.batch_operation import BatchOperation
    from tierflow.tasks.staged import StagedOperation

Loader = Callable[[], "StagedOperation"]
BatchLoader = Callable[[], "BatchOperation"]


def copy_operation() -> StagedOperation:
    from tierflow.tasks.segment_copy import COPY

    return COPY


def merge_operation() -> StagedOperation:
    from tierflow.tasks.diskless_merge import MERGE

    return MERGE


def compaction_operation() -> StagedOperation:
    from tierflow.tasks.remote_compaction import COMPACTION

    return COMPACTION


def export_operation() -> BatchOperation:
    from tierflow.tasks.iceberg_export import EXPORT

    return EXPORT


def restore_operation() -> BatchOperation:
    from tierflow.tasks.restore import RESTORE

    return RESTORE
