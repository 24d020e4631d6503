"""``tierflow cluster describe``: the brokers tierflow reads, and who leads each partition.
What it runs is in ``cluster_work``, imported when it runs."""

from __future__ import annotations

import argparse

from tierflow.cli import options
from tierflow.cli.spec import Command, Group, Work, add_commands

DESCRIPTION = """\
Show the brokers tierflow reads (TIERFLOW_BROKERS, or TIERFLOW_LOG_DIRS as one broker whose
id is the node.id/broker.id of its meta.properties) and, per partition:

  leader     the broker whose replica tierflow reads, and its leader epoch
  source     how the leader was found: cluster (Metadata API, TIERFLOW_KAFKA_BOOTSTRAP),
             kraft (the __cluster_metadata-0 log in a log dir), inferred (the replica
             with the newest epoch in its leader-epoch-checkpoint, then the highest log end
             offset, then the lowest broker id) or last-leader (a stopped cluster's
             partition, which the KRaft log leaves leaderless: the same inference among the
             replicas Kafka would elect first)
  replicas   the brokers whose log dirs hold the partition's directory
  isr        the in-sync replicas, when the cluster or the KRaft log says
  diverged   followers whose leader-epoch lineage is not a prefix of the leader's (after an
             unclean election); never read. Followers that merely lag are not listed.

With many partitions the table has one row per topic; --topic shows each partition.
"""

WORK = Work("tierflow.cli.cluster_work")

CLUSTER = Group(
    "cluster",
    help="brokers, replicas and partition leaders",
    dest="cluster_command",
    commands=(
        Command(
            "describe",
            WORK.cluster_describe,
            help="each partition's leader, replicas, ISR and diverged replicas",
            description=DESCRIPTION,
            raw=True,
            args=(
                options.topic("only this topic, one row per partition"),
                options.json("print JSON for scripts"),
            ),
        ),
    ),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``cluster`` to the ``tierflow`` command."""
    add_commands(sub, (CLUSTER,))
