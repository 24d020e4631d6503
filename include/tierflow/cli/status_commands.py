"""``tierflow status``: the Tiered storage page of the Airflow UI, in a terminal.

Per partition and topic, what is local, what is remote and how far behind each is
(``tierflow.metrics``: Kafka's RemoteCopyLag*, RemoteDeleteLag*, RemoteLogSizeBytes,
RemoteLogMetadataCount) next to the offsets and settings that explain them; then what the next
retention run would delete, the segments stuck in a STARTED state, the open scrub findings and
the latest events. The page, the tables and ``--json`` print one snapshot
(``tierflow.operator_view``); bytes and offsets are exact, not rounded. What it runs is in
``status_work``, imported when it runs.
"""

from __future__ import annotations

import argparse

from tierflow.cli import options
from tierflow.cli.spec import Command, Work, add_commands, arg, flag
from tierflow.operator_view.options import DEFAULT_LIMIT, MAX_LIMIT

DEFAULT_EVENTS = 10

WORK = Work("tierflow.cli.status_work")


STATUS = Command(
    "status",
    WORK.status_command,
    help="sizes, lags, offsets, next retention run, stuck segments, scrub findings, events",
    description="The Tiered storage page of the Airflow UI as tables. Per partition of "
    "the registered topics: local segments and bytes (from the log dirs), remote segments "
    "and bytes by state, Kafka's RemoteCopyLagBytes/Segments (local segments above the "
    "highest remote offset, less the active one), RemoteDeleteLagBytes/Segments (deletes "
    "started, not finished), RemoteLogSizeBytes, RemoteLogMetadataCount, the log start, "
    "local log start and highest remote offsets; per topic the same summed, with its "
    "tiered state, epoch and retention. Then what the next retention_expiry run (02:00 "
    "UTC) would delete, segments stuck in COPY_SEGMENT_STARTED or DELETE_SEGMENT_STARTED "
    "with the task instance that started them, the open scrub findings (segment, object, "
    "what is wrong), and the latest events. '-' means the "
    "partition is not in the log dirs. At cluster scale the partitions are summed per "
    "topic (and per broker, with several); --topic or --partition lists them one by one, "
    "a page at a time, with the retention plan of that page.",
    args=(
        options.topic("only this topic, and list its partitions [all topics, summed]"),
        options.partition("only partitions with this number, listed [all]"),
        arg("--page", type=int, default=1, help="which page of the listed partitions [1]"),
        arg(
            "--limit",
            type=int,
            default=DEFAULT_LIMIT,
            help=f"partitions a page, at most {MAX_LIMIT} [{DEFAULT_LIMIT}]",
        ),
        arg(
            "--stuck-after",
            type=int,
            metavar="SECONDS",
            help="a segment in a STARTED state for longer is stuck [TIERFLOW_STALE_COPY_GRACE_S]",
        ),
        arg("--events", type=int, default=DEFAULT_EVENTS, help=f"latest events [{DEFAULT_EVENTS}]"),
        flag("--history", "also remote size and copy lag over time (the page's chart)"),
        options.json("print the same figures as JSON, for scripts"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``status`` to the ``tierflow`` command."""
    add_commands(sub, (STATUS,))
