"""``tierflow reconcile``: compare the bucket with the metadata store, by hand.

The same plan and fixes as the weekly remote_reconcile DAG. Exit status: 0 when nothing is
wrong (or everything found was fixed), 1 when anomalies were found in a dry run or remain
after ``--apply``, 2 on errors (a fix failed, or the store or bucket could not be read).
What it runs is in ``reconcile_work``, imported when it runs.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from tierflow.cli import options
from tierflow.cli.spec import Command, Work, add_commands, arg, flag

if TYPE_CHECKING:
    from tierflow.lifecycle.reconcile import ReconcilePlan, ReconcileReport

EXIT_CLEAN, EXIT_ANOMALIES, EXIT_ERRORS = 0, 1, 2

_UNITS_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^(?P<amount>\d+(?:\.\d+)?)(?P<unit>[smhd])$")

DESCRIPTION = """\
Compare the bucket with the metadata store and report what does not match:

  orphan-object     a key under TIERFLOW_STORAGE_PREFIX that no live segment names (also
                    objects left by deleted segments, and keys outside every registered
                    partition); or a file under the Iceberg warehouse (iceberg/) that no
                    snapshot of its table, nor its metadata log, references
  stale-copy        COPY_SEGMENT_STARTED, no copy lease held, older than
                    TIERFLOW_STALE_COPY_GRACE_S: an abandoned copy
  stale-delete      DELETE_SEGMENT_STARTED older than the same grace: an interrupted delete
  missing-object    a COPY_SEGMENT_FINISHED segment's object is gone
  size-mismatch     ... or has another size than recorded
  warehouse-unchecked  the Iceberg catalog or one of its tables cannot be read: nothing
                    under iceberg/ is judged or deleted

Diskless WAL objects (<prefix>diskless/wal/<uuid>) are left to the diskless GC.

Nothing changes unless --apply is given (the default is a dry run). With --apply, orphan
objects last written longer ago than the grace period (--grace, else
TIERFLOW_RECONCILE_GRACE_S, 24h) are deleted, stale deletes are finished and stale copies
deleted through DELETE_SEGMENT_STARTED -> DELETE_SEGMENT_FINISHED; each is re-checked just
before it is done. Missing or wrong-sized objects are data loss: they are only reported, and
never "fixed" by dropping their metadata, so readers keep failing loudly rather than silently
skipping offsets. Partitions of deleted topics still being removed are left to the remover.

Exit status: 0 clean, 1 anomalies found (dry run) or remaining (--apply), 2 errors.
"""


def parse_duration(text: str) -> int:
    """``24h``, ``30m``, ``90s``, ``7d`` or ``0``, in milliseconds. A bare number other than 0
    is refused: hours or seconds would be a guess."""
    text = text.strip()
    if text == "0":
        return 0
    found = _DURATION.match(text)
    if not found:
        raise argparse.ArgumentTypeError(
            f"invalid duration {text!r}: give a number with a unit, e.g. 24h, 30m, 90s, 7d, or 0"
        )
    return round(float(found["amount"]) * _UNITS_MS[found["unit"]])


def exit_status(plan: ReconcilePlan, report: ReconcileReport | None) -> int:
    if report is not None:
        if report.failed:
            return EXIT_ERRORS
        return EXIT_ANOMALIES if report.remaining else EXIT_CLEAN
    return EXIT_ANOMALIES if plan.anomalies else EXIT_CLEAN


WORK = Work("tierflow.cli.reconcile_work")


RECONCILE = Command(
    "reconcile",
    WORK.reconcile_command,
    help="compare the bucket with the store: orphans, stale rows, missing objects",
    description=DESCRIPTION,
    raw=True,
    args=(
        flag("--apply", "fix what is safe to fix (default: a dry run that changes nothing)"),
        arg(
            "--grace",
            type=parse_duration,
            metavar="DURATION",
            help="delete orphan objects only when last written longer ago than this, e.g. 24h, "
            "30m, 90s, 7d, or 0 [TIERFLOW_RECONCILE_GRACE_S, 24h]",
        ),
        options.topic("only this topic (repeatable) [all]", action="append"),
        options.json("print the findings as JSON"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``reconcile`` to the ``tierflow`` command."""
    add_commands(sub, (RECONCILE,))
