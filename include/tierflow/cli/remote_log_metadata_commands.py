"""``tierflow remote-log-metadata ...``: tierflow and the brokers' ``__remote_log_metadata``.

``publish`` sends each transition of the topics tierflow copies to the metadata topic as a
broker would write it, so brokers serve the segments tierflow tiered (a hand-over). What they
run is in ``remote_log_metadata_work``, imported when one of them runs.
"""

from __future__ import annotations

import argparse

from tierflow.cli import options
from tierflow.cli.defaults import PUBLISH_CHUNK
from tierflow.cli.spec import Command, Group, Work, add_commands, arg, flag

WORK = Work("tierflow.cli.remote_log_metadata_work")


PUBLISH = Command(
    "publish",
    WORK.publish_command,
    help="publish tierflow's transitions to __remote_log_metadata",
    description="Send every segment and partition-delete transition of the topics tierflow "
    "copies to the cluster's __remote_log_metadata (TIERFLOW_KAFKA_BOOTSTRAP), as a broker's "
    "RemoteLogManager writes them: Kafka's record format, the metadata partition Kafka's "
    "partitioner picks, oldest first. Each is sent exactly once: a run that is stopped is "
    "finished by the next, never duplicated.",
    args=(
        arg(
            "--chunk",
            type=options.positive,
            default=PUBLISH_CHUNK,
            help=f"records per produce round [{PUBLISH_CHUNK}]",
        ),
        options.json("print the counts as JSON"),
    ),
)

HANDOVER = Command(
    "handover",
    WORK.handover_command,
    help="hand a topic tierflow copied over to the brokers' own tiering",
    description="Make the brokers serve, and go on tiering, a topic tierflow has copied: "
    "tierflow stops copying it, publishes every transition to __remote_log_metadata, then "
    "sets remote.storage.enable=true on the topic in Kafka (TIERFLOW_KAFKA_BOOTSTRAP). The "
    "brokers copy only what follows tierflow's last segment, and their local retention drops "
    "what tierflow's copies hold. Refused while a copy of the topic is in flight. Without "
    "--yes it only shows what it would do. A hand-over stopped midway is finished by running "
    "it again.",
    args=(
        arg("topic", help="the topic's name"),
        options.config("another topic config to set with it, e.g. local.retention.ms=3600000"),
        flag("--yes", "hand over (without it: a dry run)"),
        options.json("print the plan (and the outcome) as JSON"),
    ),
)


FOLLOW = Command(
    "follow",
    WORK.follow_command,
    help="mirror the brokers' segments of followed topics into the store",
    description="Read the cluster's __remote_log_metadata (TIERFLOW_KAFKA_BOOTSTRAP) from where "
    "the last run stopped and mirror every segment and state of the topics the brokers copy "
    "(handed over, or followed) into the store, marked as the brokers'. tierflow never "
    "copies, expires or removes them; restore, export, verify, reconcile and status work on "
    "them. Records of other topics are counted and left alone. Reading again is harmless.",
    args=(
        flag("--from-start", "read every partition from its first record again"),
        options.json("print the counts as JSON"),
    ),
)

TOPICS_FOLLOW = Command(
    "follow",
    WORK.topics_follow_command,
    help="follow a topic the brokers tier themselves (broker-owned)",
    description="Mark a registered topic as copied by the brokers' own tiering (Aiven's or "
    "another RemoteStorageManager), so tierflow mirrors its segments from "
    "__remote_log_metadata and never copies it. A topic tierflow has copied segments of is "
    "handed over instead (tierflow topics handover).",
    args=(arg("topic", help="the topic's name"),),
)

REMOTE_LOG_METADATA = Group(
    "remote-log-metadata",
    help="publish to and follow the brokers' __remote_log_metadata",
    dest="rlm_command",
    commands=(PUBLISH, FOLLOW),
)


def register(sub: argparse._SubParsersAction) -> None:
    add_commands(sub, (REMOTE_LOG_METADATA,))
