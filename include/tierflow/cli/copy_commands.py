"""``tierflow copy`` and ``tierflow verify``: the segment_copy DAG's work by hand, and its proof;
``tierflow scrub``: the proof again, later, from the bucket alone and within a budget.

Both read only the leader replica of each partition (tierflow.cluster), as the DAG does. Each
prints what it did per partition, then one line that says what the run came to, including
"nothing to copy"; ``--json`` prints the same as one document, sizes in exact bytes.
What they run is in ``copy_work``, imported when one of them runs.
"""

from __future__ import annotations

from tierflow.cli import options
from tierflow.cli.early import OnEarlyWorkers
from tierflow.cli.spec import Command, Work, arg, flag

WORK = Work("tierflow.cli.copy_work")
SCRUB_WORK = Work("tierflow.cli.scrub_work")

# Rewriting here (--no-spark), its workers are spawned first, each importing the job module of
# lifecycle.copy.rewrite's SEGMENT_REWRITE (cli.early).
COPY = OnEarlyWorkers(
    WORK.copy, ("tierflow.lifecycle.copy.rewrite",), here=lambda args: args.no_spark
)
JSON = options.json("print the result as JSON for scripts (sizes in exact bytes)")

SCRUB_DESCRIPTION = """\
Re-read tiered segments from the bucket, up to a budget of bytes, and check each: every
object's size and sha256 as uploaded, the manifest, every index decoded and parsed, and the
log decoded chunk by chunk (each encrypted chunk must open under the key ring). Segments
never checked go first, newest first, then the one checked longest ago, so runs cover the
whole bucket in turn; a killed run resumes where it stopped.

A finding names the object and what is wrong with it; it is recorded in the store (an event,
and the segment's open finding) until a later check passes, and local retention keeps the
local copy of its offsets meanwhile. A check repairs nothing.

--repair takes the open findings instead (a dry run: it says what it would do). With --apply,
a damaged segment whose broker still holds the same bytes locally (its size and the CRC-32
recorded by its copy) is copied again under a new segment id, read back and verified, and
only then is the damaged one deleted through Kafka's delete states; a reader always finds
those offsets. Every other finding stays open, saying why. Segments the brokers own (a
followed or handed-over topic) are only reported.

Exit status: 0 every segment checked passed (with --repair: no finding left open), 1 this
run found something wrong (each finding is named on one line on stderr), or findings stay.
"""


COMMANDS = (
    Command(
        "copy",
        COPY,
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
            options.workers(
                "processes rewriting segments in parallel here [one per core for 32 MiB or more]"
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
    Command(
        "scrub",
        SCRUB_WORK.scrub_command,
        help="re-read tiered segments within a budget and record what is wrong",
        description=SCRUB_DESCRIPTION,
        raw=True,
        args=(
            arg(
                "--budget-bytes",
                type=int,
                default=None,
                metavar="N",
                help="bytes of objects to re-read in this run [TIERFLOW_SCRUB_BUDGET_BYTES]",
            ),
            flag("--repair", "repair the open findings where safe instead (a dry run)"),
            flag("--apply", "with --repair: do it (copy again, then delete the damaged copy)"),
            JSON,
        ),
    ),
)
