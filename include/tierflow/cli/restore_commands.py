"""``tierflow restore``: partitions rebuilt from the bucket as log directories a broker loads.

A dry run says what would be written (segments, bytes, the directory) and writes nothing; a
real run shows its progress over bytes, then one line per partition. Each partition is built in
a staging directory and moved into place whole, or not at all. A restore killed or interrupted
is rerun as it was given: it keeps the segments already written; a finished one rerun says
"already restored" and writes nothing. What it runs is in ``restore_work``, imported when it
runs.
"""

from __future__ import annotations

from tierflow.cli import options
from tierflow.cli.early import OnEarlyWorkers
from tierflow.cli.spec import Command, OneOf, Work, arg, flag

WORK = Work("tierflow.cli.restore_work")
# Writing here (--no-spark), its workers are spawned first, each importing the job module of
# restore.segment_job's SEGMENT_RESTORE (cli.early).
RESTORE = OnEarlyWorkers(
    WORK.restore,
    ("tierflow.restore.segment_job",),
    here=lambda args: args.no_spark and not args.aux_state_only,
)

COMMANDS = (
    Command(
        "restore",
        RESTORE,
        help="rebuild partitions from remote storage as broker-loadable log dirs",
        description="Write each partition's remote segments back as the files a broker keeps "
        "(.log, .index, .timeindex, .txnindex, producer snapshots, leader-epoch-checkpoint, "
        "partition.metadata) and its log-start, recovery-point and high-watermark checkpoint "
        "entries, under "
        "DIR/<topic>-<partition>. Each partition is built in DIR/.<topic>-<partition>"
        ".restore-staging and moved into place whole once every object read back as recorded; "
        "a failed one leaves DIR as it was. Refuses a log dir whose .lock a broker holds and a "
        "partition dir holding files it would not write. A killed restore's rerun keeps the "
        "segments already written; a finished one's rerun writes and records nothing.",
        args=(
            arg("topic", help="the topic to restore"),
            arg(
                "--partition",
                type=int,
                action="append",
                help="a partition to restore; repeat for more [every partition in remote storage]",
            ),
            arg("--to", required=True, metavar="DIR", help="the log dir to write into"),
            OneOf(
                (
                    arg(
                        "--to-offset",
                        type=int,
                        help="end with the batch that holds this offset [the last one]",
                    ),
                    arg(
                        "--to-timestamp",
                        type=int,
                        metavar="MS",
                        help="stop with the segment that holds the first record at or after "
                        "this time, ms since the epoch [the last one]",
                    ),
                ),
                required=False,
            ),
            arg(
                "--as-topic",
                metavar="NAME",
                help="restore as a copy under this topic name (only the directory, "
                "partition.metadata and checkpoint lines differ): into a KRaft broker's log "
                "dir, the topic the cluster has under that name, whose id it takes (create it "
                "first); elsewhere a copy with an id of its own",
            ),
            flag(
                "--aux-state-only",
                "rebuild a replica's auxiliary state only: for each partition under --to, the "
                "producer snapshot and leader epochs at its local log start (no log data read)",
            ),
            options.dry_run("print the segments, bytes and directories; write nothing"),
            options.workers(
                "processes writing segments in parallel here [one per core for 32 MiB or more]"
            ),
            flag("--spark", "write the segments on Spark (spark_default), one task per segment"),
            flag(
                "--no-spark",
                "write here, on every core, even above TIERFLOW_SPARK_THRESHOLD_BYTES, where "
                "restore uses Spark",
            ),
            options.json("print the result as JSON for scripts"),
        ),
    ),
)
