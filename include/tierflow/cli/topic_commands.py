"""Topic-level operations by hand: ``delete-topic``, ``remove-partitions``, ``tiering`` and
``topics sync``.

They call the same library the topic_disablement and remote_partition_removal DAGs call, so
an operator can act (or look) without Airflow. Every destructive command prints what it would
do first and acts only with ``--yes``. What they run is in ``topic_work``, imported when one of
them runs.
"""

from __future__ import annotations

import argparse

from tierflow.cli import options
from tierflow.cli.commands import TOPIC_ACTIONS
from tierflow.cli.remote_log_metadata_commands import HANDOVER, TOPICS_FOLLOW
from tierflow.cli.spec import Command, Group, Work, add_commands, arg, flag

WORK = Work("tierflow.cli.topic_work")


# -- the commands --------------------------------------------------------------------------

COMMANDS = (
    Command(
        "delete-topic",
        WORK.delete_topic_command,
        help="mark a deleted Kafka topic so its remote data is removed",
        description="Record that Kafka deleted TOPIC: every partition of its topic id is "
        "marked DELETE_PARTITION_MARKED and the name is freed for a new topic. The hourly "
        "remote_partition_removal DAG (or 'tierflow remove-partitions --yes') then deletes "
        "the remote data. Without --yes, only shows what would be removed. Repeating it is "
        "harmless.",
        args=(
            arg("topic", help="the deleted topic's name, as registered"),
            arg("--topic-id", help="which incarnation, when the name was reused"),
            flag("--yes", "mark it (otherwise a dry run)"),
            options.json("print the result as JSON"),
        ),
    ),
    Command(
        "remove-partitions",
        WORK.remove_partitions_command,
        help="remove the remote data of marked partitions now (what the hourly DAG does)",
        description="Carry every DELETE_PARTITION_MARKED or _STARTED partition to "
        "DELETE_PARTITION_FINISHED: delete each segment through DELETE_SEGMENT_STARTED/FINISHED "
        "and sweep the partition's prefix. Safe to interrupt and rerun. Without --yes, only "
        "lists the pending partitions.",
        args=(flag("--yes", "delete (otherwise a dry run)"),),
    ),
    Group(
        "tiering",
        help="turn tiered storage off (KIP-950) or on for a topic",
        description="What the topic_disablement DAG does, synchronously. disable moves the "
        "topic ENABLED -> DISABLING -> DISABLED: with --policy retain the remote data stays "
        "readable until retention expires it; with --policy delete it is deleted now (needs "
        "--yes). Rerunning an interrupted disable with the same policy finishes it.",
        dest="tiering_command",
        commands=(
            Command(
                "disable",
                WORK.tiering_command,
                help="turn tiered storage off",
                description="KIP-950: stop copying TOPIC. With --policy retain "
                "(remote.log.copy.disable=true) its remote data stays readable until "
                "retention expires it; with --policy delete (remote.storage.enable=false) the "
                "remote data is deleted now.",
                args=(
                    arg("topic", help="a registered topic"),
                    arg(
                        "--policy",
                        choices=("retain", "delete"),
                        default="retain",
                        help="remote.log.disable.policy [retain]",
                    ),
                    flag("--yes", "required with --policy delete"),
                ),
                defaults={"action": "disable"},
            ),
            Command(
                "enable",
                WORK.tiering_command,
                help="turn tiered storage on again",
                description="Resume copying TOPIC from max(highest remote offset + 1, log "
                "start offset), in a new tiered epoch.",
                args=(arg("topic", help="a registered topic"),),
                defaults={"action": "enable", "policy": "retain", "yes": True},
            ),
        ),
    ),
)

SYNC = Command(
    "sync",
    WORK.topics_sync_command,
    help="register every topic Kafka has, with its configs (rerun to update)",
    description="Register every topic with a partition in the log dirs (all brokers' "
    "dirs), or, when "
    "TIERFLOW_KAFKA_BOOTSTRAP is set, every topic of that cluster. Each config is Kafka's "
    "value: from a cluster, what DescribeConfigs says applies to the topic (its override, "
    "else the broker's default); from the log dirs, the KRaft metadata log's override. Else"
    " the --config default, else the value already registered (Kafka's default for a new "
    "topic). The tiering switches (remote.storage.enable, remote.log.copy.disable, "
    "remote.log.delete.on.disable) count only as a topic's own override, so a source that "
    "says nothing never turns tiering off. An explicit remote.storage.enable=false does, "
    "and is printed as a warning. A rerun updates what changed, lists each change (key: old"
    " -> new), and reports each topic as created, updated or unchanged; --dry-run shows the"
    " same without writing. Like Kafka, it never tiers internal topics (__consumer_offsets,"
    " __transaction_state, ...) or the metadata topics: those are reported as skipped. "
    "Unlike Kafka, it tiers compacted topics (cleanup.policy=compact or compact,delete), "
    "copying what the broker's log cleaner has cleaned.",
    args=(
        options.config("a default for topics that do not set KEY, e.g. remote.storage.enable=true"),
        options.dry_run("show what would change, write nothing"),
        options.json("print the outcomes as JSON"),
    ),
)

TOPICS = Group(
    "topics",
    help="register topics and their tiering configs",
    dest="topics_command",
    commands=(*TOPIC_ACTIONS, SYNC, HANDOVER, TOPICS_FOLLOW),
)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``delete-topic``, ``remove-partitions`` and ``tiering`` to the ``tierflow`` command."""
    add_commands(sub, COMMANDS)
