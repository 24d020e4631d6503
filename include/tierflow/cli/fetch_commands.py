"""Inspection commands: ``fetch``, ``dump-segment`` and ``metadata``.

They read what the lifecycle wrote, never change it: a fetch through the remote read path,
a kafka-dump-log style dump of a local or remote segment, and the remote segments of each
partition with their states. What they run is in ``fetch_work``, imported when one of them
runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tierflow.cli import options
from tierflow.cli.defaults import SEGMENT_STATES
from tierflow.cli.spec import Command, OneOf, Work, add_commands, arg, flag

WORK = Work("tierflow.cli.fetch_work")


# -- the commands --------------------------------------------------------------------------

FETCH = Command(
    "fetch",
    WORK.fetch_command,
    help="read batches of a tiered partition from remote storage",
    description="Read record batches from remote storage the way a broker serves a "
    "consumer from the remote tier (KIP-405): find the segment for the offset's leader "
    "epoch, look the position up in its offset index and read only the byte ranges "
    "needed. Prints each batch like kafka-dump-log, then how many remote bytes were read.",
    args=(
        options.topic("topic name", required=True),
        options.partition("partition number", required=True),
        OneOf(
            (
                arg("--offset", type=int, help="start at the batch containing this offset"),
                arg(
                    "--timestamp",
                    type=int,
                    metavar="MS",
                    help="start at the first record with a timestamp at or after this (epoch ms)",
                ),
            )
        ),
        arg(
            "--max-bytes",
            type=int,
            default=1 << 20,
            metavar="B",
            help="stop before a batch that would exceed this many bytes; the first batch is "
            "always returned whole, however large [1048576]",
        ),
        flag(
            "--print-records",
            "also print every record with its key and payload (decoded as UTF-8)",
        ),
        arg(
            "--epochs",
            choices=("auto", "log", "remote"),
            default="auto",
            help="leader-epoch cache to resolve offsets with: the partition's "
            "leader-epoch-checkpoint in the log dirs (log), one rebuilt from the remote "
            "segments (remote), or log when the partition is in the log dirs (auto) [auto]",
        ),
        options.json(
            "print the batches as JSON for scripts (with --print-records, every record, "
            "keys and payloads in base64)",
        ),
    ),
)

DUMP_SEGMENT = Command(
    "dump-segment",
    WORK.dump_segment_command,
    help="print a segment's batches like kafka-dump-log (local file or remote segment)",
    description="Print every record batch of a segment as Kafka's kafka-dump-log does. "
    "Give a local .log path, or --segment-id (optionally with --topic/--partition as a "
    "check) for a tiered segment, which is streamed from remote storage.",
    args=(
        arg("path", nargs="?", type=Path, help="a local .log segment file"),
        options.topic("topic of the remote segment (checked against the store)"),
        options.partition("partition of the remote segment (checked, like --topic)"),
        arg("--segment-id", help="id of a remote segment, as `tierflow metadata` shows"),
        flag(
            "--deep-iteration",
            "print a line per record (offset, timestamp, sizes, sequence, header keys)",
        ),
        arg(
            "--print-records",
            "--print-data-log",
            dest="print_records",
            action="store_true",
            help="print a line per record including key and payload (implies --deep-iteration)",
        ),
        options.json(
            "print one JSON document for scripts: the batches, with their records under "
            "--deep-iteration, keys and payloads in base64 under --print-records",
        ),
    ),
)

METADATA = Command(
    "metadata",
    WORK.metadata_command,
    help="list remote segments per partition with their states",
    description="List the remote log segments of each partition, as Kafka's "
    "RemoteLogMetadataFormatter does for __remote_log_metadata: segment id, offsets, "
    "leader epochs, size, state, whether it serves reads (referenced), tiered epoch and "
    "the time of its last state change.",
    args=(
        options.topic("only this topic [all registered topics]"),
        options.partition("only this partition [all]"),
        arg(
            "--state",
            action="append",
            choices=list(SEGMENT_STATES),
            help="only segments in this state; repeat for several [all states]",
        ),
        options.json("print JSON (one object per partition) for scripts"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``fetch``, ``dump-segment`` and ``metadata`` to the ``tierflow`` command."""
    add_commands(sub, (FETCH, DUMP_SEGMENT, METADATA))
