"""``tierflow export``: tiered data as Iceberg tables, and how far behind they are.

``export iceberg`` exports each topic registered with ``tierflow.iceberg.export=true`` (or the
one ``--topic`` names): its new tiered records, read as a read_committed consumer reads them,
written as Parquet and committed once with the offsets they hold. ``--dry-run`` lists what
would be exported. ``export status`` shows each exported topic's lag.
"""

from __future__ import annotations

import argparse

from tierflow.cli import options
from tierflow.cli.spec import Command, Group, Work, add_commands, arg

WORK = Work("tierflow.cli.export_work")  # pyiceberg only when exporting

TOPIC = options.topic("only this topic [every topic with tierflow.iceberg.export=true]")
EXPORT = Group(
    "export",
    help="tiered data as Apache Iceberg tables",
    dest="export_command",
    commands=(
        Command(
            "iceberg",
            WORK.export_iceberg,
            help="export new tiered records into each topic's Iceberg table",
            description="Read each exported topic's finished remote segments from where its "
            "table's last commit ended, leave out control records and aborted transactions "
            "(as a read_committed consumer does) and stop before a transaction whose marker "
            "is not tiered yet; write the records as Parquet, one file per segment and "
            "day, and commit them to the table (a SQL catalog in the metadata store, the "
            "warehouse under the bucket's iceberg/ prefix) with the offsets they hold. A run "
            "commits once: rerun a killed run with the same --run and it finishes or sees "
            "its commit.",
            args=(
                TOPIC,
                arg("--run", metavar="ID", help="the run's id, to rerun a killed run [new]"),
                options.dry_run("list the partitions and offsets to export; write nothing"),
                options.workers(
                    "processes writing partitions in parallel here "
                    "[one per core for 32 MiB or more]"
                ),
                options.json("print the result as JSON for scripts"),
            ),
        ),
        Command(
            "status",
            WORK.export_status,
            help="how far each exported topic's table is behind its tiered data",
            description="Per partition of each exported topic: the last offset in remote "
            "storage, the last offset committed to its Iceberg table, and the export lag "
            "(offsets, and bytes of the segments still to export).",
            args=(TOPIC, options.json("print the lag as JSON for scripts")),
        ),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    add_commands(sub, (EXPORT,))
