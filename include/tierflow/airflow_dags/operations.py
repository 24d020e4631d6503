"""The staged operations as the DAG files hand them to the pipeline: each a function that
imports its task bodies only when a task runs it, so parsing a DAG file imports none of them.
The DAG file passes the function itself; nothing looks an operation up by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tierflow.tasks.staged import StagedOperation

Loader = Callable[[], "StagedOperation"]


def copy_operation() -> StagedOperation:
    from tierflow.tasks.segment_copy import COPY

    return COPY


def merge_operation() -> StagedOperation:
    from tierflow.tasks.diskless_merge import MERGE

    return MERGE


def compaction_operation() -> StagedOperation:
    from tierflow.tasks.remote_compaction import COMPACTION

    return COMPACTION
