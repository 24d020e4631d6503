"""A restore as an operator asks for it (the CLI's flags, the DAG's form): a topic, its
partitions (every one in remote storage by default), a target log dir, where to stop, a new
name. Kept apart from request.py, which runs it, so that each partition's preparation
(partition.py) can take it whole without an import cycle."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tierflow.lifecycle.progress import NO_PROGRESS, Progress


@dataclass(frozen=True)
class RestoreRequest:
    topic: str
    to: Path
    partitions: tuple[int, ...] = ()  # empty: every partition with a finished remote segment
    to_offset: int | None = None
    to_timestamp: int | None = None
    as_topic: str | None = None
    # The live cluster (TIERFLOW_KAFKA_BOOTSTRAP) whose metadata the restored partitions must
    # match; without it, the broker's own metadata log in ``to`` (stray.py).
    bootstrap: str | None = None
    dry_run: bool = False
    actor: str = "tierflow"
    progress: Progress = field(default=NO_PROGRESS, compare=False)
