"""``tierflow diskless``: diskless topics (KIP-1163) by hand.

``register`` makes a topic diskless, ``produce`` writes record batches into WAL objects through
the coordinator, ``fetch`` reads them back through the diskless read path (continuing from
tiered segments), ``merge``, ``retention`` and ``gc`` run what the diskless_merge and
diskless_gc DAGs schedule, and ``describe`` is KIP-1163's kafka-diskless-metadata.sh.
What they run is in ``diskless_work``, imported when one of them runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tierflow.cli import options
from tierflow.cli.defaults import KAFKA_SEGMENT_BYTES, TIMESTAMP_TYPES
from tierflow.cli.spec import Command, Group, Work, add_commands, arg, flag

WORK = Work("tierflow.cli.diskless_work")


# -- the commands --------------------------------------------------------------------------

ACTIONS = (
    Command(
        "register",
        WORK.register_command,
        help="make a topic diskless (idempotent)",
        description="A new diskless topic is consolidated (remote.storage.enable=true): the "
        "merge moves its older batches into tiered segments. Give --config "
        "remote.storage.enable=false for a topic whose data stays in WAL objects until "
        "retention deletes it. Either way it is fixed once the topic is diskless.",
        args=(
            arg("topic", help="the diskless topic's name"),
            arg("--partitions", type=int, required=True, help="its number of partitions"),
            arg("--topic-id", help="Kafka topic id [the registered one, or a new one]"),
            arg(
                "--timestamp-type",
                choices=TIMESTAMP_TYPES,
                default=TIMESTAMP_TYPES[0],
                help=f"message.timestamp.type of the topic [{TIMESTAMP_TYPES[0]}]",
            ),
            options.config("retention.ms, ..."),
        ),
    ),
    Command(
        "produce",
        WORK.produce_command,
        help="produce record batches into a diskless topic",
        description="Each batch of each FILE (a .log segment, or producer batches back to "
        "back) is one produce request for PARTITION. Without files, and with "
        "TIERFLOW_KAFKA_BOOTSTRAP set, reads --source-topic from Kafka instead (untested: see "
        "tierflow.diskless.produce).",
        args=(
            arg("topic", help="the diskless topic to produce into"),
            arg("files", nargs="*", type=Path, help="files of record batches (.log segments)"),
            options.partition("the partition to produce into [0]", default=0),
            arg("--source-topic", help="the Kafka topic to read [TOPIC]"),
            options.json("print the objects, batches, bytes and offsets as JSON"),
        ),
        trailing="files",
    ),
    Command(
        "fetch",
        WORK.fetch_command,
        help="read batches through the diskless read path",
        description="Read a diskless partition from an offset: from tiered segments below "
        "the WAL start, then from WAL objects with one ranged GET per contiguous run, offsets "
        "injected as the broker would. Prints each batch like kafka-dump-log.",
        args=(
            arg("topic", help="the diskless topic"),
            options.partition("the partition", required=True),
            arg("--offset", type=int, required=True, help="start at the batch holding it"),
            arg(
                "--max-bytes",
                type=int,
                default=1 << 20,
                help="stop before a batch past this size; the first is whole [1048576]",
            ),
            flag("--print-records", "also print every record with its key and payload"),
            arg("--output", type=Path, help="write the batches to this file"),
            options.json("print the batches as JSON (records in base64 with --print-records)"),
        ),
    ),
    Command(
        "merge",
        WORK.merge_command,
        help="merge WAL batches into tiered segments now (what the diskless_merge DAG runs)",
        description="For each partition of the consolidated diskless topics: the batches "
        "committed at least --min-age-ms ago, rolled into segments at --segment-bytes, go "
        "through the copy lifecycle (COPY_SEGMENT_STARTED, upload, verify, FINISHED) and are "
        "then dropped from the WAL. A plain rerun on this host resumes a killed or interrupted "
        "merge (it takes over the lease of a run whose process is gone), as does a rerun with "
        "the same --owner. A partition whose lease another run holds is named on stderr with "
        "who holds it and until when; the others go on (exit 1).",
        args=(
            options.topic("only this topic [every consolidated diskless topic]"),
            arg(
                "--min-age-ms",
                type=int,
                default=0,
                help="merge only batches committed this long ago [0: everything committed]",
            ),
            arg(
                "--segment-bytes",
                type=int,
                default=KAFKA_SEGMENT_BYTES,
                help=f"roll merged segments at this size (segment.bytes) [{KAFKA_SEGMENT_BYTES}]",
            ),
            arg("--max-segments", type=int, help="per partition [all]"),
            options.OWNER,
            options.dry_run("list what would be merged; write nothing"),
            options.json("print each partition's merge report as JSON"),
        ),
    ),
    Command(
        "describe",
        WORK.describe_command,
        help="diskless topics and WAL objects, like kafka-diskless-metadata.sh",
        description="Per topic: offsets, size on object storage, total size of the WAL "
        "objects holding it, and of those of them also holding deleted batches. With "
        "--objects, per WAL object: key, state, total size and used size.",
        args=(
            options.topic("only this topic [every diskless topic]"),
            flag("--objects", "list the WAL objects too"),
            options.json("print the overview as JSON (sizes in exact bytes)"),
        ),
    ),
    Command(
        "retention",
        WORK.retention_command,
        help="apply retention.ms/bytes to the WAL",
        description="Delete each diskless partition's batches past retention.ms or "
        "retention.bytes (logically: their WAL objects' used size shrinks), and carry remote "
        "retention's log start over to the diskless log. What the diskless_gc DAG does first.",
        args=(options.topic("only this topic [every diskless topic]"),),
    ),
    Command(
        "gc",
        WORK.gc_command,
        help="delete WAL objects that are due, from storage",
        description="Delete every WAL object emptied longer than "
        "TIERFLOW_DISKLESS_DELETE_GRACE_MS ago and every object never committed within "
        "TIERFLOW_DISKLESS_UNCOMMITTED_GRACE_MS; rows go only once storage confirmed.",
    ),
    Command(
        "demo",
        WORK.demo_command,
        help="produce into diskless topics, read back, merge into tiered storage, collect",
        description="Generate the demo broker log dir under <data>/diskless-demo (replacing "
        "it), register its non-transactional topics as consolidated diskless topics, produce "
        "every batch through WAL objects, fetch every partition back through the diskless "
        "read path and compare it byte for byte with the broker's segments; then merge the "
        "WAL into tiered segments (chunked, compressed, encrypted), fetch again (now from "
        "tiered storage), and garbage-collect the emptied WAL objects.",
        args=(arg("--data-dir", type=Path, help="[<data>/diskless-demo]"),),
    ),
)

DISKLESS = Group(
    "diskless",
    help="diskless topics (KIP-1163): register, produce, fetch, merge, gc, describe",
    description="Diskless topics keep no broker log: batches of many partitions go into "
    "shared WAL objects in the bucket, and the coordinator (in the metadata store) assigns "
    "their offsets.",
    dest="diskless_command",
    commands=ACTIONS,
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``diskless`` to the ``tierflow`` command."""
    add_commands(sub, (DISKLESS,))
