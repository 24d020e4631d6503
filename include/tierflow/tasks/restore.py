"""The partition_restore DAG's task: a restore request from the trigger form, JSON in and out.

The restore itself is resumable (tierflow.restore): a cleared or killed task is rerun with the
same request and continues where it stopped; a finished one changes nothing when rerun.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tierflow.config import Settings
from tierflow.restore.request import RestoreRequest, run_restore
from tierflow.runtime import open_storage, open_store

log = logging.getLogger(__name__)


def restore_from_form(params: dict, *, actor: str, settings: Settings | None = None) -> dict:
    """Restore (or, on a dry run, plan) what the form asks; one report line per partition."""
    settings = settings or Settings.from_env()
    request = RestoreRequest(
        topic=params["topic"],
        to=Path(params["to"]),
        partitions=tuple(int(p) for p in params.get("partitions") or ()),
        to_offset=params.get("to_offset"),
        to_timestamp=params.get("to_timestamp"),
        as_topic=params.get("as_topic") or None,
        dry_run=bool(params.get("dry_run", True)),
        actor=actor,
    )
    reports = run_restore(open_store(settings), open_storage(settings), request)
    for r in reports:
        log.info(
            "%s%s: %d segments, %d bytes, offsets %d-%d, into %s (%d already there)",
            "dry run: would restore " if r.dry_run else "restored ",
            r.partition,
            r.segments,
            r.size_in_bytes,
            r.start_offset,
            r.next_offset - 1,
            r.directory,
            r.already_restored,
        )
    return {"dry_run": request.dry_run, "partitions": [r.as_dict() for r in reports]}
