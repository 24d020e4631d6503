"""``tierflow compact``: one remote_compaction run from a shell, partition after partition.
What it runs is in ``compaction_work``, imported when it runs."""

from __future__ import annotations

import argparse

from tierflow.cli import options
from tierflow.cli.spec import Command, Work, add_commands, flag

DESCRIPTION = """\
Compact the tiered segments of compacted topics (cleanup.policy=compact) as Kafka's log
cleaner compacts a log: what one remote_compaction DAG run does, here in this process.

A partition is compacted when its cleanable range is due: the dirty ratio (bytes after the
last compaction over all) reaches min.cleanable.dirty.ratio, or the first dirty segment is
older than max.compaction.lag.ms; --force compacts any cleanable range. The range leaves
out the head still on the broker, segments younger than min.compaction.lag.ms and any
transaction whose marker is not tiered yet. Per key the latest record stays, byte for byte
at its offset; tombstones older than delete.retention.ms go, and so do aborted transactions.
Consecutive segments up to segment.bytes become one new segment; the segments it replaces
are deleted only once it is verified and COPY_SEGMENT_FINISHED.

A killed or interrupted run is finished by the next one: a plain rerun on this host takes
over the lease of a run whose process is gone (the same --owner takes it over at once). A
partition whose lease another run holds is named on stderr with who holds it, since and until
when (TIERFLOW_COPY_LEASE_TTL_S from its taking), and how to take it.

Exit status: 0 done, 1 some partition failed (each is named on one line on stderr), 2 --topic
names a topic that is not compacted, 3 --topic names no known topic.
"""

WORK = Work("tierflow.cli.compaction_work")

COMPACT = Command(
    "compact",
    WORK.compact_command,
    help="compact the tiered segments of compacted topics (what remote_compaction runs)",
    description=DESCRIPTION,
    raw=True,
    args=(
        options.topic("only this topic [every compacted tiered topic]"),
        flag("--force", "compact every cleanable range, whatever its dirty ratio"),
        options.now(
            "judge lags and tombstones as of this ISO-8601 instant [the current time]",
        ),
        options.OWNER,
        options.dry_run("list the groups each partition would get; change nothing"),
        options.json("print each partition's report as JSON, for scripts"),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    add_commands(sub, (COMPACT,))
