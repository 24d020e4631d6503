"""``tierflow retention``: one retention_expiry DAG run from a shell, for on-call.

The same task bodies the DAG runs, in its order: plan the whole cluster into shards, expire
every shard (here in-process, one after the other), then summarize. Each partition's plan is
the one its run carried out (local retention first, remote planned after it), so the plan
printed first is exactly what was deleted, or with --dry-run what would be. What it runs is in
``retention_work``, imported when it runs.
"""

from __future__ import annotations

import argparse

from tierflow.cli import options
from tierflow.cli.spec import Command, Work, add_commands

DESCRIPTION = """\
Run what one retention_expiry DAG run does, from this shell: local retention
(local.retention.ms/bytes) then remote retention (retention.ms/bytes, the log start
offset, the leader-epoch lineage, unfinished deletes and stale copies) for every
partition of the tiered topics, one after the other. Local files are deleted only with
TIERFLOW_DELETE_LOCAL_SEGMENTS=true.

Prints the plan first (per partition: segments to delete, the rule that chose them,
bytes; and the totals), then what was deleted per topic. A partition that fails is named
and the others go ahead.

Exit status: 0 done, 1 some partition failed (each is named on one line on stderr); an
error that stops the whole run (settings, store) exits as it does for every command.
"""

WORK = Work("tierflow.cli.retention_work")

RETENTION = Command(
    "retention",
    WORK.retention_command,
    help="run or preview the nightly tiered retention (what one retention_expiry run does)",
    description=DESCRIPTION,
    raw=True,
    args=(
        options.dry_run("plan and print what would be deleted; change nothing"),
        options.now(
            "evaluate retention as of this ISO-8601 instant, e.g. 2026-05-01T02:00:00Z "
            "(UTC without an offset), as a backfill of that night would [the current time]",
        ),
        options.json("print the plan and the result as JSON ({plan, result}), for scripts"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``retention`` to the ``tierflow`` command."""
    add_commands(sub, (RETENTION,))
