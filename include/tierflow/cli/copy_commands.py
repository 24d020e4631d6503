"""``tierflow copy`` and ``tierflow verify``: the segment_copy DAG's work by hand, and its proof.

Both read only the leader replica of each partition (tierflow.cluster), as the DAG does. Each
prints what it did per partition, then one line that says what the run came to, including
"nothing to copy"; ``--json`` prints the same as one document, sizes in exact bytes.
What they run is in ``copy_work``, imported when one of them runs.
"""

from __future__ import annotations

from tierflow.cli import options
from tierflow.cli.spec import Command, Work, arg, flag

WORK = Work("tierflow.cli.copy_work")

JSON = options.json("print the result as JSON for scripts (sizes in exact bytes)")

COMMANDS = (
    Command(
        "copy",
        WORK.copy,
        help="copy eligible segments now (what the segment_copy DAG does)",
        description="Copy every eligible segment of tiered partitions (rolled, below the last "
        "stable offset, not yet remote), reading each partition's leader replica. Safe to "
        "interrupt and rerun: abandoned attempts are cleaned up first, and a plain rerun takes "
        "over the lease of a run on this host whose process is gone. A partition whose lease "
        "another run holds fails on one line on stderr saying who holds it, since and until "
        "when; the others go on (exit 1).",
        args=(
            options.topic("only this topic [every registered topic]"),
            options.partition("only this partition number (with or without --topic)"),
            options.OWNER,
            options.dry_run("list what would be copied; write nothing"),
            arg(
                "--workers",
                type=int,
                metavar="N",
                help="processes rewriting segments in parallel here [one per core]",
            ),
            flag(
                "--spark", "rewrite on Spark (spark_default), as the DAG does above the threshold"
            ),
            flag(
                "--no-spark",
                "rewrite here even above TIERFLOW_SPARK_THRESHOLD_BYTES, where copy uses Spark",
            ),
            JSON,
        ),
    ),
    Command(
        "verify",
        WORK.verify,
        help="read tiered segments back and compare them with the local files",
        description="Read every COPY_SEGMENT_FINISHED segment back from the bucket (decrypted "
        "and decompressed) and compare it byte for byte with the local segment, when the "
        "local one still exists. Exit 1 if any differs.",
        args=(options.topic("only this topic [every registered topic]"), JSON),
    ),
)
